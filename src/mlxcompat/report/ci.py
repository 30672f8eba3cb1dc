"""What CI shows besides the report: a JUnit XML file (one testcase per result) and GitHub
`::error` annotations: the first of the unexpected outcomes and one summary line."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from mlxcompat.records.report import Change, ReportRow, read_compat

MAX_ANNOTATIONS = 10  # GitHub shows at most 10 `::error` lines per step; the rest are lost


def _name(r: ReportRow | Change) -> str:
    return " ".join(p for p in (r.about.text, r.subject) if p)


def write_junit(report: Path, out: Path) -> int:
    """One testsuite per cell, one testcase per result; returns the testcase count.

    An unexpected outcome is a failure; an expected fail / error passes with its reason in
    system-out; a skip is skipped.
    """
    doc = read_compat(report)
    root = ET.Element("testsuites", name="mlxcompat")
    suites: dict[str, ET.Element] = {}
    count = 0
    for r in doc.results:
        suite = suites.get(r.cell)
        if suite is None:
            suite = suites[r.cell] = ET.SubElement(root, "testsuite", name=r.cell)
        case = ET.SubElement(suite, "testcase", classname=r.cell, name=_name(r),
                             time=f"{float(r.seconds or 0):.3f}")
        count += 1
        if not r.outcome.expected:
            failure = ET.SubElement(case, "failure", message=r.outcome.why[:500])
            failure.text = r.detail
        elif r.verdict == "skip":
            ET.SubElement(case, "skipped", message=r.detail[:500])
        elif r.verdict in ("fail", "error"):
            ET.SubElement(case, "system-out").text = (
                f"expected {r.verdict}: {r.outcome.reason} {r.outcome.link}\n{r.detail}")
    for problem in [*doc.problems, *doc.missing]:
        if "inputs" not in suites:
            suites["inputs"] = ET.SubElement(root, "testsuite", name="inputs")
        case = ET.SubElement(suites["inputs"], "testcase", classname="inputs", name=problem[:120])
        ET.SubElement(case, "failure", message=problem[:500])
        count += 1
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return count


def _escape(text: str) -> str:
    """GitHub's workflow-command escaping for messages."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_lines(report: Path) -> list[str]:
    doc = read_compat(report)
    lines = [f"::error title=mlxcompat input::{_escape(p)}"
             for p in [*doc.problems, *doc.missing]]
    for r in doc.results:
        if not r.outcome.expected:
            title = _escape(f"{r.cell}: {_name(r)}")
            message = _escape(f"{r.outcome.why} — {r.detail[:300]}")
            lines.append(f"::error title={title}::{message}")
    for c in doc.changes.regressions:
        lines.append(f"::error title=regression {_escape(c.cell)}::"
                     f"{_escape(_name(c) + ': ' + c.change)}")
    return _capped(lines)


def _capped(lines: list[str]) -> list[str]:
    """The first MAX_ANNOTATIONS errors, and a `::warning` (its own per-step quota) that says
    how many there were, so a long list never silently loses its count."""
    if not lines:
        return []
    shown = lines[:MAX_ANNOTATIONS]
    rest = len(lines) - len(shown)
    more = f"; {rest} more not shown here, see the report artifact" if rest else ""
    return [*shown, f"::warning title=mlxcompat summary::{len(lines)} finding(s): unexpected "
                    f"outcomes, input problems, missing cells, regressions{more}"]


def print_annotations(report: Path) -> None:
    for line in annotation_lines(report):
        print(line)
