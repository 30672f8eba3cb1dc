import json

import pytest

from mlxcompat.results import CheckResult, describe_exception, empty_cell, write_json_atomic


def test_atomic_write_leaves_only_the_file(tmp_path):
    target = tmp_path / "raw" / "cell.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["cell.json"]


def test_atomic_write_keeps_old_file_when_serialisation_fails(tmp_path):
    target = tmp_path / "cell.json"
    write_json_atomic(target, {"ok": True})

    class Boom:
        def __str__(self):
            raise RuntimeError("cannot serialise")

    with pytest.raises(RuntimeError):
        write_json_atomic(target, {"bad": Boom()})
    assert json.loads(target.read_text()) == {"ok": True}
    assert len(list(tmp_path.iterdir())) == 1


def test_describe_exception_names_type_message_and_frame():
    def inner():
        raise ValueError("shapes (3) and (4) differ\nsecond line")

    try:
        inner()
    except ValueError as exc:
        text = describe_exception(exc)
    assert text.startswith("ValueError: shapes (3) and (4) differ (at test_results.py:")
    assert "second line" not in text
    assert "in inner" in text


def test_empty_cell_has_every_section():
    doc = empty_cell("mlx-lm-0.32.2")
    assert doc["schema"] == 1
    assert set(doc) == {"schema", "cell", "env", "install", "results", "patches", "bench"}


def test_check_result_json_round_trip():
    r = CheckResult("parity", "fail", "fresh", "llama", "none", {"max_abs_delta": 0.5}, "x")
    assert CheckResult(**r.to_json()) == r
