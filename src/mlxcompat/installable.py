"""Does every cell of the matrix install on every macOS runner label it would run on?

Checked on any machine, without a Mac: `uv pip compile --python-platform aarch64-apple-darwin`
with MACOSX_DEPLOYMENT_TARGET set to each label's macOS (hosted_runners.yaml), Python from
the matrix, over what a cell's venv installs: the harness's own dependencies, the cell's pins
(a resolved cell resolved for that label first) with the darwin mlx requirement, and each
subject's requirements (--no-deps, as the cell installs them). A cell that would not install
on a label is named with uv's reason.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path

from mlxcompat.hosted import deployment_target
from mlxcompat.matrix import LATEST, Cell, Matrix
from mlxcompat.resolve import PACKAGES, PLATFORM, compile_pins

SHOWN = ("mlx-lm", "mlx", "mlx-metal", "mlx-vlm", "transformers")


@dataclass
class Resolution:
    cell: str
    label: str
    macos: str
    ok: bool
    pins: dict[str, str] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0


def harness_dependencies() -> list[str]:
    """mlxcompat's own Requires-Dist without extras: every cell venv installs them."""
    return [r for r in metadata.requires("mlxcompat") or [] if "extra ==" not in r]


@cache
def _newest() -> dict[str, str]:
    from mlxcompat.pypi import newest

    return {name: newest(name) for name in PACKAGES}


def cell_pins(matrix: Matrix, cell: Cell, macos: str) -> dict[str, str]:
    if cell.resolve == LATEST:
        return dict(_newest())
    if cell.resolve:
        spec = matrix.subjects[cell.resolve]
        found = compile_pins(list(spec.requirements), matrix.settings.python, macos)
        return {k: found[k] for k in PACKAGES if k in found}
    return dict(cell.pins)


def resolve_one(matrix: Matrix, cell: Cell, label: str, backend: str) -> Resolution:
    macos = deployment_target(label)
    start = time.perf_counter()
    python = matrix.settings.python
    try:
        pins = cell_pins(matrix, cell, macos)
        reqs = [f"{name}=={v}" for name, v in pins.items() if name != "mlx"]
        reqs.append(matrix.mlx_template("darwin", backend).format(v=pins["mlx"]))
        found = compile_pins([*harness_dependencies(), *reqs], python, macos)
        for name in cell.subjects:
            if matrix.subjects[name].requirements:
                compile_pins(list(matrix.subjects[name].requirements), python, macos,
                             no_deps=True)
    except (RuntimeError, KeyError) as exc:
        return Resolution(cell.id, label, macos, False, error=" ".join(str(exc).split())[-500:],
                          seconds=round(time.perf_counter() - start, 2))
    return Resolution(cell.id, label, macos, True, {k: found[k] for k in SHOWN if k in found},
                      seconds=round(time.perf_counter() - start, 2))


def resolve_all(matrix: Matrix, labels: list[str], backend: str = "metal",
                jobs: int = 4) -> list[Resolution]:
    """Every (cell, label), in matrix order; index round trips, so a few at once."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(resolve_one, matrix, c, label, backend)
                   for c in matrix.cells for label in labels]
        return [f.result() for f in futures]


def table(rows: list[Resolution], seconds: float, python: str) -> str:
    labels = list(dict.fromkeys(r.label for r in rows))
    cells = list(dict.fromkeys(r.cell for r in rows))
    bad = [r for r in rows if not r.ok]
    lines = [f"# Every cell resolved for each macOS runner label ({PLATFORM}, Python {python})",
             "", f"{len(cells)} cells x {len(labels)} labels "
             f"({', '.join(f'{lb}: macOS {deployment_target(lb)}' for lb in labels)}): "
             f"{len(rows) - len(bad)} installable, {len(bad)} not, in {seconds:.0f} s "
             "(`uv pip compile` with MACOSX_DEPLOYMENT_TARGET per label).", "",
             "| cell | label | " + " | ".join(SHOWN) + " | s |",
             "|---|---|" + "---|" * len(SHOWN) + "---|"]
    for r in rows:
        shown = [r.pins.get(k, "") for k in SHOWN] if r.ok else [f"NOT INSTALLABLE: {r.error}"]
        shown += [""] * (len(SHOWN) - len(shown))
        lines.append(f"| {r.cell} | {r.label} | " + " | ".join(shown) + f" | {r.seconds} |")
    return "\n".join(lines) + "\n"


def cmd_installable(matrix: Matrix, labels: list[str], out: Path | None, backend: str) -> int:
    """`mlxcompat installable`: fails naming each cell and label that would not install."""
    start = time.perf_counter()
    rows = resolve_all(matrix, labels, backend)
    seconds = time.perf_counter() - start
    text = table(rows, seconds, matrix.settings.python)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    bad = [r for r in rows if not r.ok]
    for r in bad:
        print(f"mlxcompat installable: {r.cell} does not install on {r.label} "
              f"(macOS {r.macos}): {r.error}")
    print(f"mlxcompat installable: {len(rows) - len(bad)} of {len(rows)} (cell, label) "
          f"installable in {seconds:.0f}s" + (f" -> {out}" if out else ""))
    return 1 if bad else 0
