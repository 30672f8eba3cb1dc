"""The subject axis of the report: a family's releases on one cell, run-length coded, and
the releases where rows changed (exact: every release of the family is measured)."""

from __future__ import annotations

from mlxcompat.families import Family, FamilyEntry
from mlxcompat.records.cell import SubjectCounts
from mlxcompat.records.report import CompatDoc, Outcome, ReportCell, ReportPatch, ReportRow
from mlxcompat.report.subject_axis import subject_axes

VERSIONS = ("0.2.0", "0.2.1", "0.2.5", "0.2.7", "0.3.0")
FAMILY = Family("srv", "srv", VERSIONS, {"mamba": FamilyEntry("srv.p:f")})


def _row(version: str, verdict: str, mode: str = "fresh") -> ReportRow:
    return ReportRow(check="parity", subject=f"srv-{version}", verdict=verdict, model="mamba2",
                     mode=mode, cell="c", base="c", outcome=Outcome(expected=True),
                     fault="subject" if verdict != "pass" else None)


def _patch(version: str, observed: str, log: list[str] | None = None) -> ReportPatch:
    return ReportPatch(subject=f"srv-{version}", role="mamba", entry_point="srv.p:f",
                       observed=observed, log=log or [], cell="c")


def _report() -> CompatDoc:
    verdicts = {"0.2.0": "fail", "0.2.1": "pass", "0.2.5": "pass", "0.2.7": "fail",
                "0.3.0": "fail"}
    patches = [_patch("0.2.1", "applied"), _patch("0.2.5", "applied"),
               _patch("0.2.7", "skipped", ["only logs"]), _patch("0.3.0", "skipped", ["x"])]
    return CompatDoc(
        cells=[ReportCell(cell="c", base="c", subjects={
            "srv-0.2.5": SubjectCounts(), "srv-0.2.1": SubjectCounts(same_as="srv-0.2.5")})],
        results=[_row(v, verdict) for v, verdict in verdicts.items()]
        + [_row(v, "pass", "history") for v in VERSIONS],
        patches=patches)


def test_the_line_run_length_codes_what_each_release_does() -> None:
    (axis,) = subject_axes(_report(), {"srv": FAMILY})
    assert axis.line() == ("srv on c: ≤ 0.2.0 no patch · 0.2.1–0.2.5 mamba patches · "
                           "0.2.7+ mamba only logs")
    assert [(r.span, r.word) for r in axis.standing] == [
        ("≤ 0.2.0", "1 not pass (1 its own)"), ("0.2.1–0.2.5", "all pass"),
        ("0.2.7+", "1 not pass (1 its own)")]
    assert axis.shared == {"0.2.1": "0.2.5"}


def test_changes_name_the_first_release_of_each_new_behaviour() -> None:
    (axis,) = subject_axes(_report(), {"srv": FAMILY})
    found = [(c.previous, c.release, c.before, c.after, c.abouts) for c in axis.changes]
    assert ("0.2.0", "0.2.1", "fail", "pass", ["parity mamba2 fresh"]) in found
    assert ("0.2.5", "0.2.7", "pass", "fail", ["parity mamba2 fresh"]) in found
    assert ("0.2.5", "0.2.7", "patches", "only logs", ["patch mamba"]) in found
    assert not any("history" in a for *_, abouts in found for a in abouts)  # never changed
    assert axis.changes[0].text().startswith("0.2.0 → 0.2.1: ")


def test_a_cell_with_one_release_of_the_family_has_no_axis() -> None:
    report = _report()
    report.results = [r for r in report.results if r.subject == "srv-0.3.0"]
    assert subject_axes(report, {"srv": FAMILY}) == []


def test_a_cell_that_measured_two_releases_names_them_without_ranges() -> None:
    report = _report()
    keep = {"srv-0.2.5", "srv-0.3.0"}
    report.results = [r for r in report.results if r.subject in keep]
    report.patches = [p for p in report.patches if p.subject in keep]
    (axis,) = subject_axes(report, {"srv": FAMILY})
    assert axis.line() == "srv on c: 0.2.5 mamba patches · 0.3.0+ mamba only logs"
