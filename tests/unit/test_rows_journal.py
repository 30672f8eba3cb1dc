"""A subject's rows journal: every recorded row survives, whatever the last save held."""

import json

from mlxcompat.records.files import append_row, read_document, rows_journal, write_json_atomic


def _doc(path, rows):
    write_json_atomic(path, {"schema": 3, "results": rows})


def test_rows_after_the_last_save_come_from_the_journal(tmp_path):
    out = tmp_path / "none.json"
    rows = [{"check": "parity", "verdict": v} for v in ("pass", "fail", "error")]
    with rows_journal(out).open("w") as journal:
        for row in rows:
            append_row(journal, row)
    _doc(out, rows[:1])  # saved after the first row only, then the process died
    assert read_document(out)["results"] == rows


def test_a_line_cut_by_a_crash_is_left_out(tmp_path):
    out = tmp_path / "none.json"
    _doc(out, [])
    rows_journal(out).write_text(json.dumps({"verdict": "pass"}) + "\n" + '{"verd')
    assert read_document(out)["results"] == [{"verdict": "pass"}]


def test_a_complete_save_and_no_journal_read_as_saved(tmp_path):
    out = tmp_path / "none.json"
    rows = [{"verdict": "pass"}, {"verdict": "skip"}]
    _doc(out, rows)
    assert read_document(out)["results"] == rows
    rows_journal(out).write_text("".join(json.dumps(r) + "\n" for r in rows[:1]))
    assert read_document(out)["results"] == rows  # the journal never shortens a save
    assert read_document(tmp_path / "absent.json") is None
