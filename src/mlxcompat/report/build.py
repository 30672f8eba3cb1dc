"""`mlxcompat report`: aggregate, diff against the baseline, write compat.{json,md,html}.

Exit code 1 only for unexpected outcomes or regressions against the baseline; the last line
printed says why. Input problems are one line each, on stderr and in the report.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from mlxcompat.matrix import Matrix
from mlxcompat.report.aggregate import aggregate
from mlxcompat.report.baseline import diff, load_baseline, regressions
from mlxcompat.report.load import load_cells
from mlxcompat.results import write_json_atomic


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
                 html: bool = True) -> tuple[int, str]:
    """Write the report files; returns (exit code, the closing line)."""
    loaded = load_cells(paths.raw)
    baseline, problem = load_baseline(paths.baseline)
    problems = loaded.problems + ([problem] if problem else [])
    for line in problems:
        print(f"mlxcompat report: {line}", file=sys.stderr)
    report = aggregate(loaded.cells, matrix, problems)
    threshold = float(matrix.settings["throughput_threshold"]) if matrix else 0.2
    changes = diff(report, baseline, threshold)
    report["changes"] = changes
    extra_md, extra_html = _drift_sections(paths)
    paths.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(paths.out / "compat.json", report)
    from mlxcompat.report.markdown import render_markdown

    markdown = render_markdown(report, changes, extra_md)
    _write_text(paths.out / "compat.md", markdown)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(markdown)
    if html:
        from mlxcompat.report.html import render_html

        _write_text(paths.out / "compat.html", render_html(report, changes, extra_html))
    if accept:
        shutil.copyfile(paths.out / "compat.json", paths.baseline)
    return _verdict(report, changes, accept)


def _drift_sections(paths: ReportPaths) -> tuple[list[str], list[str]]:
    """The API-drift section when `mlxcompat probe` wrote probe.json beside the report."""
    probe = paths.out / "probe.json"
    if not probe.exists():
        return [], []
    from mlxcompat.report.drift import drift_html, drift_markdown

    return drift_markdown(probe), drift_html(probe)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _verdict(report: dict, changes: dict, accepted: bool) -> tuple[int, str]:
    regress = [] if accepted else regressions(changes)
    unexpected = [r for r in report["results"] if r["outcome"] == "unexpected"]
    for r in unexpected[:20]:
        print(f"unexpected: {r['cell']} {r['check']} {r['model']} {r['mode']} {r['subject']}: "
              f"{r['verdict']} (expected {r['expected'] or 'pass'}) {r['detail'][:120]}")
    for line in regress:
        print(f"regression: {line}")
    why = []
    if unexpected:
        why.append(f"{len(unexpected)} unexpected outcome(s)")
    if regress:
        why.append(f"{len(regress)} regression(s) against the baseline")
    if not report["cells"]:
        why.append("no cell results to report")
    tail = " (accepted as the new baseline)" if accepted else ""
    if why:
        return 1, "mlxcompat report: FAILED: " + "; ".join(why) + tail
    return 0, f"mlxcompat report: OK: {len(report['cells'])} cells, all outcomes as expected{tail}"
