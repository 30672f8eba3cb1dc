"""The order subject processes start in: the longest checks of the cell's last run first."""

from mlxcompat.records.files import last_check_seconds, write_json_atomic


def test_the_last_documents_check_seconds_are_read_and_a_bad_one_gives_none(tmp_path):
    out = tmp_path / "cell.json"
    assert last_check_seconds(out) == {}
    write_json_atomic(out, {"subjects": {
        "none": {"seconds": {"start": 1.0, "checks": 8.4, "bench": 3.0}},
        "vmlx": {"seconds": {"checks": 3.1}},
        "old": {"seconds": None},  # a document written before the field: zero
        "odd": {"seconds": {"checks": "x"}},  # unreadable: left out, so it starts first
    }})
    assert last_check_seconds(out) == {"none": 8.4, "vmlx": 3.1, "old": 0.0}
    out.write_text('{"subjects": ')
    assert last_check_seconds(out) == {}


def test_the_runner_starts_the_longest_first_and_a_new_subject_before_all(tmp_path,
                                                                           monkeypatch):
    """`run_cell` sorts its subjects by the last run's seconds before `_loop` (which then
    puts the need probe's host first); the order reaches the loop, nothing else changes."""
    from types import SimpleNamespace

    from mlxcompat import runner

    seen = []

    def loop(opts, tmp, need, events, workers, todo, server, share):
        seen.extend(s.name for s in todo)
        return True

    monkeypatch.setattr(runner, "_loop", loop)
    monkeypatch.setattr(runner, "merge_cell", lambda *a: (SimpleNamespace(
        to_json=lambda: {}), None))
    subjects = [SimpleNamespace(name=n) for n in ("none", "a", "b", "new", "c")]
    run = SimpleNamespace(last_seconds={"none": 9.0, "a": 0.5, "b": 7.0, "c": 2.0},
                          same_as={}, name="cell")
    opts = SimpleNamespace(out=tmp_path / "cell.json", subjects=subjects, reused=(),
                           run=run, need_probe=False, device="cpu")
    monkeypatch.setenv("MLXCOMPAT_OVERLAP", "0")  # no bench lock taken by a unit test
    monkeypatch.setattr(runner.forkserver, "available", lambda: False)
    runner.run_cell(opts)
    assert seen == ["new", "none", "b", "c", "a"]
