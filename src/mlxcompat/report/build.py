"""`mlxcompat report`: aggregate, diff against the baseline, write compat.{json,md,html}.

Fails closed. The exit code is non-zero, with one line naming each, for: an input problem
(unreadable, half-written, incomplete or future-schema JSON), a matrix cell a runner label
should have and does not, an unexpected outcome, and a regression against the baseline
(unless accepted). The last line printed says which.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from mlxcompat.matrix import Matrix
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.report import Changes, CompatDoc
from mlxcompat.report.aggregate import aggregate
from mlxcompat.report.baseline import diff, load_baseline, regressions
from mlxcompat.report.load import LoadedCells, load_cells
from mlxcompat.report.since import previous_report
from mlxcompat.report.since import since as compare_since


@dataclass
class ReportPaths:
    raw: Path
    out: Path
    baseline: Path

    @classmethod
    def under(cls, raw: Path, out: Path | None = None) -> ReportPaths:
        out = out or raw.parent
        return cls(raw, out, out / "baseline.json")


def build_report(paths: ReportPaths, matrix: Matrix | None, accept: bool = False,
                 html: bool = True, tag: str = "", only: tuple[str, ...] = (),
                 since: Path | None = None, labels: tuple[str, ...] = ()) -> tuple[int, str]:
    """Write the report files; returns (exit code, the closing line). `tag` / `only`: the run
    covered just that tag's cells / these cells, so only those must be present; `labels`: the
    runner labels it asked for, each of which must have files; `since`: the earlier
    compat.json to list changes against (default: the one this replaces)."""
    loaded = load_cells(paths.raw, matrix, tag, only, labels)
    baseline, problem = load_baseline(paths.baseline)
    if problem:
        loaded.problems.append(problem)
    for line in loaded.problems:
        print(f"mlxcompat report: problem: {line}", file=sys.stderr)
    for line in loaded.missing:
        print(f"mlxcompat report: missing: {line}", file=sys.stderr)
    for name in loaded.strays:
        print(f"mlxcompat report: ignored {name}: it belongs to no matrix cell", file=sys.stderr)
    report = aggregate(loaded.cells, matrix)
    report.problems, report.missing, report.strays = (loaded.problems, loaded.missing,
                                                      loaded.strays)
    report.labels, report.tag = loaded.labels, tag or "all"
    report.requires, report.releases = _from_drift(paths.out / "drift.json")
    if matrix is not None:
        _families(report, matrix)
    report.full_run = (bool(matrix) and not tag and not only and not loaded.missing
                       and "" in loaded.labels)
    threshold = float(matrix.settings.throughput_threshold) if matrix else 0.2
    changes = diff(report, baseline, threshold)
    report.changes = changes
    earlier, name = previous_report(since or paths.out / "compat.json")
    if earlier is not None:
        report.since = compare_since(report, earlier, name)
    paths.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(paths.out / "compat.json", report.to_json())
    _render(paths, report, changes, html)
    if accept:
        shutil.copyfile(paths.out / "compat.json", paths.baseline)
    return verdict(report, changes, loaded, accept)


def _families(report: CompatDoc, matrix: Matrix) -> None:
    """Each subject family's members and, per cell that measured several, its release axis."""
    from mlxcompat.records.report import AxisLine
    from mlxcompat.report.subject_axis import subject_axes

    report.families = {n: list(f.members()) for n, f in matrix.families.items()}
    report.subject_axes = [
        AxisLine(family=a.family, cell=a.cell, line=a.line(), behaviour=a.behaviour_text(),
                 changes=[c.text() for c in a.changes], shared=dict(a.shared))
        for label in dict.fromkeys(c.label for c in report.cells)
        for a in subject_axes(report, matrix.families, label)]


def _from_drift(drift: Path) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """Each subject's declared mlx-lm / mlx-vlm ranges and every PyPI release of each axis,
    recorded by `mlxcompat drift` (empty when it has not run: boundaries then read as
    ranges, never as exact)."""
    import json

    try:
        doc = json.loads(drift.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    return dict(doc.get("requires") or {}), dict(doc.get("releases") or {})


def _render(paths: ReportPaths, report: CompatDoc, changes: Changes, html: bool) -> None:
    from mlxcompat.report.drift import drift_html, drift_markdown
    from mlxcompat.report.markdown import render_front_page, render_markdown

    drift = paths.out / "drift.json"
    extra_md = drift_markdown(drift) if drift.exists() else []
    _write_text(paths.out / "compat.md", render_markdown(report, changes, extra_md))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        link = os.environ.get("MLXCOMPAT_REPORT_URL", "")
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(render_front_page(report, changes, link))
    if html:
        from mlxcompat.report.html import render_html

        extra_html = drift_html(drift) if drift.exists() else []
        _write_text(paths.out / "compat.html", render_html(report, changes, extra_html))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def verdict(report: CompatDoc, changes: Changes, loaded: LoadedCells,
            accepted: bool) -> tuple[int, str]:
    """(exit code, the closing line) of the report."""
    regress = [] if accepted else regressions(changes)
    unexpected = [r for r in report.results if not r.outcome.expected]
    for r in unexpected[:30]:
        print(f"unexpected: {r.cell} {r.about.text} {r.subject}: {r.outcome.why} — "
              f"{r.detail[:140]}")
    if len(unexpected) > 30:
        print(f"unexpected: … and {len(unexpected) - 30} more (see compat.md)")
    for line in regress:
        print(f"regression: {line}")
    if changes.no_baseline:
        print(f"mlxcompat report: {len(changes.no_baseline)} cell(s) had no comparable "
              f"baseline: {', '.join(changes.no_baseline[:8])}"
              + (" …" if len(changes.no_baseline) > 8 else ""))
    why = []
    if loaded.problems:
        why.append(f"{len(loaded.problems)} input problem(s)")
    if loaded.missing:
        why.append(f"{len(loaded.missing)} missing cell(s)")
    if unexpected:
        why.append(f"{len(unexpected)} unexpected outcome(s)")
    if regress:
        why.append(f"{len(regress)} regression(s) against the baseline")
    if not report.cells:
        why.append("no cell results to report")
    tail = " (accepted as the new baseline)" if accepted else ""
    if why:
        return 1, "mlxcompat report: FAILED: " + "; ".join(why) + tail
    return 0, (f"mlxcompat report: OK: {len(report.cells)} cells, unexpected: 0 "
               f"({report.expected_failures} expected failures, each documented){tail}")
