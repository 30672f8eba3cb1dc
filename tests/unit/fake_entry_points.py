"""Entry points for test_subjects, each behaving like a kind of patch module.

They patch `fake_target` (a module the tests put in sys.modules) in the ways real patches do.
"""

import logging
import sys

from mlxcompat.patches.status import PatchStatus


def _target():
    return sys.modules["fake_target"]


def returns_status():
    return PatchStatus("mamba", "skipped", "native")


def claims_applied_patches_nothing():
    return PatchStatus("mamba", "applied", "done")


def logs_only():
    logging.getLogger("fake").info("nothing to do")


def raises():
    raise RuntimeError("boom")


def raises_half_applied():
    _target().helper = lambda: "half"
    raise RuntimeError("failed after replacing helper")


def in_place_method():
    _target().Cache.extract = lambda self, i: i


def wraps_every_call():
    old = _target().helper
    _target().helper = lambda: old()


_saved = {}


def reversible():
    if "helper" not in _saved:
        _saved["helper"] = _target().helper
        _target().helper = lambda: "patched"
    return PatchStatus("mamba", "applied", "ok")


def unpatch():
    if "helper" in _saved:
        _target().helper = _saved.pop("helper")


def reseeds():
    import mlx.core as mx

    mx.random.seed(7)


def touches_process_state():
    import os

    os.environ["MLXCOMPAT_FAKE_PATCHED"] = "1"
    logging.getLogger().setLevel(logging.CRITICAL)


def marks_mlx_core():
    """A process-wide mark on mlx.core, outside any target (the test removes it)."""
    import mlx.core as mx

    mx._mlxcompat_fake_shim = True
