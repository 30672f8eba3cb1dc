"""Borrowing `none`'s behaviour rows: only for a subject observed to change nothing, every
case named, a case `none` lacks an error; the wide footprint sees what patch rows cannot."""

from __future__ import annotations

import importlib
import sys
import threading

import pytest

from mlxcompat import footprint
from mlxcompat.borrow import borrow_rows, case_keys, why_not
from mlxcompat.checks.spec import Case
from mlxcompat.records.cell import Borrowed, CellDoc, SubjectCounts
from mlxcompat.records.patches import Idempotence, PatchRow, ProcessState
from mlxcompat.records.rows import ResultRow

pytest.importorskip("mlx_lm")


def _row(check: str, subject: str, verdict: str = "pass", **keys: str) -> ResultRow:
    return ResultRow(check=check, subject=subject, verdict=verdict, **keys)


def test_rows_are_copied_for_every_named_case_and_a_missing_one_is_an_error() -> None:
    doc = CellDoc(cell="c", results=[
        _row("parity", "none", "fail", model="mamba", mode="history-equal"),
        _row("server", "none", model="llama", scenario="cancel"),
        _row("patch-status", "none", role="mamba"),
        _row("patch-status", "old", "fail", role="mamba")])
    cases = [case_keys(Case("parity", model="mamba", mode="history-equal")),
             case_keys(Case("server", model="llama", scenario="cancel")),
             case_keys(Case("server", model="mamba", scenario="cancel"))]
    doc.subjects = {"none": SubjectCounts(collected=3),
                    "old": SubjectCounts(collected=1, borrowed=Borrowed(source="none",
                                                                        cases=cases))}
    borrow_rows(doc)
    mine = {(r.check, r.model): r for r in doc.results if r.subject == "old"}
    assert mine[("parity", "mamba")].verdict == "fail"
    assert mine[("parity", "mamba")].borrowed_from == "none"
    assert mine[("server", "llama")].verdict == "pass"
    missing = mine[("server", "mamba")]
    assert missing.verdict == "error" and "none has no row" in missing.detail
    assert missing.scenario == "cancel" and not missing.borrowed_from
    assert mine[("patch-status", "")].verdict == "fail"  # its own row stays its own
    assert sum(r.subject == "old" for r in doc.results) == 4


def test_anything_an_entry_point_changed_or_left_rules_borrowing_out() -> None:
    quiet = PatchRow(subject="s", role="mamba", entry_point="m:f", observed="skipped",
                     process=ProcessState(), idempotence=Idempotence())
    assert why_not([quiet], []) == []
    assert why_not([quiet.model_copy(update={"observed": "applied"})], [])
    assert why_not([quiet.model_copy(update={"changed": ["mlx_lm.generate:x"]})], [])
    assert why_not([quiet.model_copy(update={"process": ProcessState(
        environ=["added X"])})], [])
    assert why_not([quiet.model_copy(update={"idempotence": Idempotence(
        second_call_changed=["mlx_lm.generate:x"])})], [])
    assert why_not([quiet], ["imported mlx_lm.models.mamba2"]) == [
        "imported mlx_lm.models.mamba2"]


@pytest.fixture
def prepared() -> footprint.Footprint:
    footprint.prepare(footprint.family_modules(["llama", "mamba"]))
    return footprint.take()


def test_a_quiet_entry_point_leaves_no_footprint(prepared: footprint.Footprint) -> None:
    import logging

    logging.getLogger("quiet").info("nothing to do here")
    assert footprint.changes(prepared, footprint.take()) == []


def test_a_function_rebound_outside_every_role_target_is_seen(prepared) -> None:
    base = importlib.import_module("mlx_lm.models.base")
    original = base.create_attention_mask
    base.create_attention_mask = lambda *a, **k: original(*a, **k)
    try:
        found = footprint.changes(prepared, footprint.take())
    finally:
        base.create_attention_mask = original
    assert found == ["mlx_lm.models.base:create_attention_mask rebound or altered"]


def test_a_method_replaced_in_place_and_a_registry_filled_in_place_are_seen(prepared) -> None:
    llama = importlib.import_module("mlx_lm.models.llama")
    utils = importlib.import_module("mlx_lm.utils")
    registry = next(k for k, v in vars(utils).items() if isinstance(v, dict)
                    and not k.startswith("__"))
    original = llama.Attention.__call__
    llama.Attention.__call__ = lambda self, *a, **k: original(self, *a, **k)
    getattr(utils, registry)["mlxcompat-test"] = "x"
    try:
        found = footprint.changes(prepared, footprint.take())
    finally:
        llama.Attention.__call__ = original
        getattr(utils, registry).pop("mlxcompat-test")
    assert f"mlx_lm.utils:{registry} rebound or altered" in found
    assert "mlx_lm.models.llama:Attention.__call__ rebound or altered" in found


def test_import_hooks_threads_and_new_modules_are_seen(prepared) -> None:
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    sys.meta_path.insert(0, Finder())
    thread.start()
    fresh = next(n for n in ("mlx_lm.models.mamba2", "mlx_lm.models.gemma", "mlx_lm.models.phi")
                 if n not in sys.modules)
    importlib.import_module(fresh)
    try:
        found = footprint.changes(prepared, footprint.take())
    finally:
        sys.meta_path.pop(0)
        stop.set()
        thread.join()
    assert "import hooks (sys.meta_path / sys.path_hooks) changed" in found
    assert "started 1 thread(s)" in found
    assert f"imported {fresh}" in found
    package, _, name = fresh.rpartition(".")
    assert f"{package}:{name} added" not in found  # the package's attribute is the import


def test_a_change_outside_the_role_targets_is_recorded_on_its_process_state(prepared) -> None:
    """What the entry point changed beyond its role's targets, by module; imports left out."""
    found = ["mlx_lm.generate:_make_cache rebound or altered",
             "mlx.core:new_thread_local_stream rebound or altered",
             "mlx.core:_shim_installed added", "imported mlx_lm.models.mamba2",
             "started 1 thread(s)"]
    assert footprint.outside(found, ("mlx_lm.generate", "mlx_lm.models.cache")) == [
        "mlx.core:new_thread_local_stream rebound or altered", "mlx.core:_shim_installed added",
        "started 1 thread(s)"]
