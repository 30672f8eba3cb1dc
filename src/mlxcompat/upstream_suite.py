"""`python -m mlxcompat.upstream_suite`: mlx-lm's own tests, without and with a subject's patches.

Run inside a cell's venv by the `upstream` nox session. Takes tests/test_generate.py and
tests/test_prompt_cache.py from the installed release's sdist, runs them once as shipped and
once with the subject's entry points applied first (mlxcompat.upstream_plugin, which also
stands a tiny random model in for the hub one), and writes `<cell>.upstream.<subject>.json`
beside the cell's JSON: one `upstream-suite` row per test whose outcome changed (a fail), and
one summary row that says how many tests ran. Nothing ran, or a run that could not start, is
an error row, never silence.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

from mlxcompat.pypi import sdist_for
from mlxcompat.records.cell import UpstreamRun
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.names import ALL_TESTS
from mlxcompat.records.rows import ResultRow

FILES = ("tests/test_generate.py", "tests/test_prompt_cache.py")
CHECK = "upstream-suite"


def fetch_tests(version: str, cache: Path, dest: Path) -> list[Path]:
    """Upstream's test files of mlx-lm `version`, extracted from its sdist into `dest`."""
    found: list[Path] = []
    with tarfile.open(sdist_for("mlx-lm", version, cache)) as tar:
        for member in tar.getmembers():
            inner = member.name.partition("/")[2]
            if inner in FILES and member.isfile():
                source = tar.extractfile(member)
                assert source is not None
                target = dest / Path(inner).name
                target.write_bytes(source.read())
                found.append(target)
    missing = sorted(set(FILES) - {f"tests/{p.name}" for p in found})
    if missing:
        raise RuntimeError(f"mlx-lm {version}'s sdist has no {', '.join(missing)}")
    return sorted(found)


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | error | skipped, from a JUnit XML file."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("error", "failure", "skipped") if k in kinds), "passed")
        found[name] = {"failure": "failed"}.get(outcome, outcome)
    return found


def run_tests(folder: Path, entry_points: dict[str, str], path: list[str], label: str,
              timeout: float) -> tuple[dict[str, str], str]:
    """One pytest run of the extracted tests; (outcomes, why it produced none)."""
    junit = folder / f"{label}.xml"
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "MLXCOMPAT_UPSTREAM_ENTRY_POINTS": json.dumps(entry_points),
           "MLXCOMPAT_UPSTREAM_RECORD": str(folder / f"{label}.applied.json"),
           "PYTHONPATH": os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "pytest", str(folder), "-p", "mlxcompat.upstream_plugin",
           "-p", "no:cacheprovider", "-o", "addopts=", "-q", "--rootdir", str(folder),
           f"--junitxml={junit}"]
    try:
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {}, f"pytest ({label}) ran past {timeout:.0f}s"
    tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-4:])
    if not junit.exists():
        return {}, f"pytest ({label}) exited {proc.returncode} before any test: {tail}"
    found = outcomes(junit)
    return found, "" if found else f"pytest ({label}) collected no test: {tail}"


def _counts(found: dict[str, str]) -> dict[str, int]:
    kinds = ("passed", "failed", "error", "skipped")
    return {k: sum(1 for v in found.values() if v == k) for k in kinds}


def _row(subject: str, verdict: str, test: str, detail: str, **metrics: object) -> ResultRow:
    return ResultRow(check=CHECK, subject=subject, verdict=verdict, test=test,
                     detail=detail, metrics=metrics)


def compare(subject: str, before: dict[str, str], after: dict[str, str]) -> list[ResultRow]:
    """A fail per test whose outcome changed with the patches; a summary row last."""
    rows = []
    for test in sorted(set(before) | set(after)):
        was, now = before.get(test, "absent"), after.get(test, "absent")
        if was != now:
            rows.append(_row(subject, "fail", test,
                             f"{was} without the patches, {now} with them",
                             without=was, **{"with": now}))
    ran = sum(1 for v in before.values() if v != "skipped")
    both_failed = sorted(t for t, v in before.items() if v in ("failed", "error")
                         and after.get(t) == v)
    detail = (f"{ran} of {len(before)} upstream tests ran ({_counts(before)['skipped']} skipped); "
              f"{len(rows)} outcome(s) changed with the patches; {len(both_failed)} fail "
              "either way on the tiny stand-in model")
    rows.append(_row(subject, "fail" if rows else "pass", ALL_TESTS, detail,
                     without=_counts(before), fail_either_way=both_failed,
                     **{"with": _counts(after)}))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlxcompat.upstream_suite")
    parser.add_argument("--cell", required=True)
    parser.add_argument("--subject", required=True)
    parser.add_argument("--entry-points", default="{}", help='JSON {role: "module:function"}')
    parser.add_argument("--subject-path", action="append", default=[])
    parser.add_argument("--cache", type=Path, required=True, help="sdist cache folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    points = json.loads(args.entry_points)
    version = metadata.version("mlx-lm")
    doc = UpstreamRun(cell=args.cell, mlx_lm=version, subject=args.subject, files=list(FILES))
    with tempfile.TemporaryDirectory(prefix="mlxcompat-upstream-") as tmp:
        folder = Path(tmp)
        try:
            fetch_tests(version, args.cache, folder)
        except Exception as exc:  # no sdist, no network, no tests in it
            rows = [_row(args.subject, "error", ALL_TESTS,
                         f"upstream tests not run: {type(exc).__name__}: {exc}")]
        else:
            before, why = run_tests(folder, {}, args.subject_path, "without", args.timeout)
            after, why_after = run_tests(folder, points, args.subject_path, "with",
                                         args.timeout) if not why else ({}, "")
            problem = why or why_after
            rows = ([_row(args.subject, "error", ALL_TESTS, problem)]
                    if problem else compare(args.subject, before, after))
            applied = folder / "with.applied.json"
            doc.applied = json.loads(applied.read_text()) if applied.exists() else []
            if not problem and len(doc.applied) != len(points):
                rows = [_row(args.subject, "error", ALL_TESTS,
                             "the entry points were not applied in the second run")]
    doc.results = rows
    write_json_atomic(args.out, doc.to_json())
    summary = rows[-1]
    print(f"[mlxcompat] {args.cell} upstream-suite {args.subject}: {summary.verdict}: "
          f"{summary.detail}")
    for line in doc.applied:
        print(f"[mlxcompat]   applied {line}")
    for row in rows[:-1]:
        print(f"[mlxcompat]   {row.test}: {row.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
