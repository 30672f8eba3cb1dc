"""Installed files that differ from their RECORD, files a call writes (by stat), and the copy
that keeps a write out of the installer's hard-linked cache."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from mlxcompat.drivers.installed import changed_in, stat_changes, stat_files, unshare


def _site(tmp: Path, prefixed: bool = True) -> tuple[Path, Path]:
    site = tmp / "site"
    pkg = site / "mlx_lm" / "models"
    pkg.mkdir(parents=True)
    lines = []
    for name, body in (("mlx_lm/__init__.py", b""), ("mlx_lm/models/deepseek_v3.py", b"v3\n")):
        (site / name).write_bytes(body)
        digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        lines.append(f"{name},{'sha256=' if prefixed else ''}{digest},{len(body)}")
    info = site / "mlx_lm-0.32.2.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("\n".join([*lines, "mlx_lm-0.32.2.dist-info/RECORD,,"]) + "\n")
    return site, info


def test_an_untouched_install_has_no_changes_with_or_without_the_sha256_prefix(tmp_path):
    for prefixed in (True, False):  # mlx 0.29's RECORD has no `sha256=`
        site, info = _site(tmp_path / str(prefixed), prefixed)
        assert changed_in(site, info) == []


def test_a_replaced_file_and_a_backup_beside_it_are_named(tmp_path: Path) -> None:
    site, info = _site(tmp_path)
    (site / "mlx_lm/models/deepseek_v3.py").write_bytes(b"vmlx's copy\n")
    (site / "mlx_lm/models/deepseek_v3.py.vmlx-backup-1").write_bytes(b"v3\n")
    assert changed_in(site, info) == ["mlx_lm/models/deepseek_v3.py",
                                      "mlx_lm/models/deepseek_v3.py.vmlx-backup-1 (added)"]


def test_stat_snapshots_see_a_write(tmp_path: Path) -> None:
    site, _ = _site(tmp_path)
    folders = [site / "mlx_lm"]
    before = stat_files(folders)
    (site / "mlx_lm/models/deepseek_v3.py").write_bytes(b"something longer\n")
    assert stat_changes(before, stat_files(folders)) == ["mlx_lm/models/deepseek_v3.py"]


def test_bytecode_written_by_an_import_is_not_a_write(tmp_path: Path) -> None:
    """Python writes a module's bytecode through a temporary `.pyc.<id>` file: seen mid-write
    (another subject importing in the shared venv), it is no file the patch wrote."""
    cache = tmp_path / "mlx" / "nn" / "__pycache__"
    cache.mkdir(parents=True)
    before = stat_files([tmp_path / "mlx"])
    (cache / "init.cpython-311.pyc.139865303122192").write_bytes(b"partial")
    (cache / "init.cpython-311.pyc").write_bytes(b"whole")
    assert stat_changes(before, stat_files([tmp_path / "mlx"])) == []


def test_unshare_gives_the_venv_its_own_copy_of_hard_linked_files(tmp_path: Path) -> None:
    site, _ = _site(tmp_path)
    target = site / "mlx_lm/models/deepseek_v3.py"
    cache = tmp_path / "cache.py"
    os.link(target, cache)  # as uv links an install to its cache
    assert unshare(site) == 1
    assert target.stat().st_nlink == 1 and target.read_bytes() == b"v3\n"
    target.write_bytes(b"a subject's write\n")
    assert cache.read_bytes() == b"v3\n"  # the cache (and every venv linked to it) is intact
    assert unshare(site) == 0
