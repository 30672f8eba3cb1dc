from mlxcompat.runner import merge_parts


def _part(subject, verdicts):
    return {
        "env": {"python": "3.11"},
        "results": [{"check": "parity", "verdict": v, "subject": subject} for v in verdicts],
        "patches": [{"subject": subject, "patch": "mamba", "status": "applied"}],
        "bench": [],
    }


def test_parts_are_concatenated_in_subject_order():
    doc = merge_parts("c", [("none", 1, _part("none", ["pass"])),
                            ("mlxcompat", 0, _part("mlxcompat", ["fail", "skip"]))])
    assert [r["subject"] for r in doc["results"]] == ["none", "mlxcompat", "mlxcompat"]
    assert len(doc["patches"]) == 2
    assert doc["env"] == {"python": "3.11"}


def test_timed_out_subject_becomes_an_error_naming_the_budget():
    doc = merge_parts("c", [("none", None, _part("none", ["pass"]))], budget=60)
    assert [r["verdict"] for r in doc["results"]] == ["pass", "error"]
    assert "60s budget" in doc["results"][-1]["detail"]


def test_crashed_subject_without_file_becomes_an_error():
    doc = merge_parts("c", [("none", -11, None)])
    (row,) = doc["results"]
    assert row["verdict"] == "error"
    assert "signal 11" in row["detail"]


def test_crash_after_some_results_keeps_them_and_adds_an_error():
    doc = merge_parts("c", [("none", -6, _part("none", ["pass"]))])
    assert [r["verdict"] for r in doc["results"]] == ["pass", "error"]
