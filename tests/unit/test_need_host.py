"""Who runs the need probe: never a process whose rounds are timed (the probe's leftovers
slowed `none`, the reference of every paired overhead: reports/evidence/aa-processes*)."""

from __future__ import annotations

from pathlib import Path

from mlxcompat.matrix import SubjectSpec
from mlxcompat.runner import need_host

SUBJECTS = [SubjectSpec("mlxcompat"), SubjectSpec("none"), SubjectSpec("twin")]


def test_none_hosts_the_probe_only_where_no_round_is_timed() -> None:
    host = need_host(SUBJECTS, Path("need.json"), None)
    assert host is not None and host.name == "none"
    assert need_host(SUBJECTS, Path("need.json"), object()) is None


def test_no_host_without_none_or_without_a_probe() -> None:
    assert need_host(SUBJECTS[::2], Path("need.json"), None) is None
    assert need_host(SUBJECTS, None, None) is None
