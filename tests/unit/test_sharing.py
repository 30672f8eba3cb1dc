"""Family members with byte-identical entry-point modules share one run, under the newest; a
member without any entry point shares `none`'s; the shared rows say whose run they are."""

from __future__ import annotations

import zipfile
from pathlib import Path

from mlxcompat.matrix_entries import SubjectSpec
from mlxcompat.records.cell import CellDoc, SubjectCounts
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import ResultRow
from mlxcompat.sharing import folder_reader, plan_sharing, share_rows, subject_key, wheel_reader

EP = {"mamba": "srv.utils.cache:fix"}


def _member(tmp: Path, version: str, body: str, eps: dict[str, str] = EP) -> SubjectSpec:
    folder = tmp / version / "srv" / "utils"
    folder.mkdir(parents=True)
    (folder / "cache.py").write_text(body)
    (tmp / version / "srv" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return SubjectSpec(f"srv-{version}", eps, (f"srv=={version}",), family="srv",
                       version=version)


def test_identical_modules_share_under_the_newest_and_other_bytes_do_not(tmp_path: Path) -> None:
    specs = [_member(tmp_path, "0.1", "A = 1\n"), _member(tmp_path, "0.2", "A = 1\n"),
             _member(tmp_path, "0.10", "A = 1\n"), _member(tmp_path, "0.3", "A = 2\n")]
    same_as = plan_sharing(specs, lambda s: folder_reader(tmp_path / s.version))
    assert same_as == {"srv-0.1": "srv-0.10", "srv-0.2": "srv-0.10"}


def test_a_missing_module_or_no_reader_shares_nothing(tmp_path: Path) -> None:
    a = _member(tmp_path, "0.1", "A = 1\n", {"mamba": "srv.gone:fix"})
    b = _member(tmp_path, "0.2", "A = 1\n", {"mamba": "srv.gone:fix"})
    assert plan_sharing([a, b], lambda s: folder_reader(tmp_path / s.version)) == {}
    c, d = _member(tmp_path, "0.3", "A = 1\n"), _member(tmp_path, "0.4", "A = 1\n")
    assert plan_sharing([c, d], lambda s: None) == {}


def test_a_release_without_entry_points_shares_what_none_runs(tmp_path: Path) -> None:
    bare = _member(tmp_path, "0.1", "", eps={})
    upstream = SubjectSpec("none")
    assert plan_sharing([upstream, bare], lambda s: folder_reader(tmp_path)) == \
        {"srv-0.1": "none"}
    assert plan_sharing([bare], lambda s: folder_reader(tmp_path)) == {}


def test_the_key_is_the_same_from_a_wheel_and_from_the_installed_folder(tmp_path: Path) -> None:
    _member(tmp_path, "0.1", "A = 1\n")
    wheel = tmp_path / "srv-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("srv/utils/cache.py", "A = 1\n")
    assert subject_key(EP, wheel_reader(wheel)) == subject_key(
        EP, folder_reader(tmp_path / "0.1")) is not None
    assert subject_key({"mamba": "srv.utils.cache:other"}, wheel_reader(wheel)) != \
        subject_key(EP, wheel_reader(wheel))


def test_shared_rows_carry_the_members_name_and_say_whose_run_they_are() -> None:
    doc = CellDoc(cell="c", results=[
        ResultRow(check="parity", subject="srv-0.10", verdict="fail", model="mamba"),
        ResultRow(check="parity", subject="none", verdict="pass", model="llama")],
        patches=[PatchRow(subject="srv-0.10", role="mamba", entry_point="srv:f",
                          observed="applied")],
        subjects={"srv-0.10": SubjectCounts(collected=1, bench_cases=2),
                  "none": SubjectCounts(collected=1)})
    share_rows(doc, {"srv-0.1": "srv-0.10", "srv-0.0": "none"}, installs=["srv-0.0"])
    mine = [r for r in doc.results if r.subject == "srv-0.1"]
    assert [(r.check, r.verdict) for r in mine] == [("parity", "fail")]
    assert [p.subject for p in doc.patches] == ["srv-0.10", "srv-0.1"]
    assert doc.subjects["srv-0.1"].same_as == "srv-0.10"
    assert doc.subjects["srv-0.1"].bench_cases == 0  # throughput is measured once, not copied
    bare = [(r.check, r.verdict) for r in doc.results if r.subject == "srv-0.0"]
    assert bare == [("install", "pass"), ("parity", "pass")]
