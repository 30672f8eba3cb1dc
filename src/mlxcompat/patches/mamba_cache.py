"""Continuous batching for SSM (Mamba / Mamba2 / linear-attention) caches in mlx-lm.

Our implementation of the `vllm_mlx.utils.mamba_cache` contract, exact wherever a patch can
reach. `ensure_mamba_support()` tries the installed release (ssm_probe) and installs only the
parts it needs:

- `segments`: prefill in column segments so padding never enters recurrent state
  (ssm_segments); needed wherever a padded batch differs from its rows run alone, which
  Mamba v1 (no padding mask at all) does in every release. Per family: a family whose tiny
  model's padded batches (new prompts, and history with unequal tails) the probe finds
  exact is left to upstream; every other SSM model is segmented;
- `batch-cache`: BatchMambaCache through `_make_cache` / `_merge_caches` where the generator
  keeps history but ArraysCache cannot extract or merge;
- `history-length`: `cache_length` that sees SSM state, where it would drop the history;
- `arrays-cache`: ArraysCache.merge / extract corrected where they exist but are broken.

`patch_mlx_lm_for_mamba()` forces every part whose hook exists. Both are idempotent and
atomic (a failure part-way restores everything first); `unpatch()` restores by identity
every original whose target still holds ours. Both are safe from several threads at once:
one lock; the first caller applies, the others wait and get the same status. The status is
re-read from the targets: `replaced` once another patch sits on one of ours (a later call
then changes nothing; `unpatch()` leaves that patch's objects in place). The probe leaves
mlx's random generator where the caller had it. Self-contained: stdlib, mlx and mlx_lm
only, so a server can vendor it.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from typing import Any

from mlxcompat.patches import ssm_cache, ssm_probe, ssm_segments
from mlxcompat.patches.journal import Journal
from mlxcompat.patches.status import PatchStatus, replaced

logger = logging.getLogger(__name__)
PATCH = "mamba"
_journal = Journal()
_lock = threading.RLock()
_status: PatchStatus | None = None
_batch_cls: type | None = None


def _batch_class() -> type:
    """One BatchMambaCache class per process (so a re-apply installs the same one)."""
    global _batch_cls
    if _batch_cls is None:
        _batch_cls = ssm_cache.batch_cache_class()
    return _batch_cls


def _with_batch_class(wrap: Any) -> Any:
    """`wrap(original, BatchMambaCache)` as the one-argument maker the journal calls."""
    def make(original: Any) -> Any:
        return wrap(original, _batch_class())
    return make


def _install_batch_cache(journal: Journal) -> list[str]:
    gen = importlib.import_module("mlx_lm.generate")
    # load_prompt_cache finds a saved cache's class by name in mlx_lm.models.cache: a batch
    # cache saved by a server must load back, so the class is known there while installed.
    journal.replace(ssm_cache.cache_module(), "BatchMambaCache", _batch_class())
    done = []
    for name, wrap in (("_make_cache", ssm_cache.wrap_make_cache),
                       ("_merge_caches", ssm_cache.wrap_merge_caches)):
        if hasattr(gen, name):
            journal.wrap(gen, name, _with_batch_class(wrap))
            done.append(name)
    return done


def _install_history_length(journal: Journal) -> list[str]:
    cache = ssm_cache.cache_module()
    journal.wrap(cache, "cache_length", ssm_cache.wrap_cache_length)
    return ["cache_length"]


def _install_arrays_cache(journal: Journal) -> list[str]:
    arrays = ssm_cache.cache_module().ArraysCache
    journal.wrap(arrays, "merge", ssm_cache.fixed_merge)
    journal.wrap(arrays, "extract", ssm_cache.fixed_extract)
    return ["ArraysCache.merge", "ArraysCache.extract"]


def _plan(forced: bool) -> list[tuple[str, str]]:
    """(part, why) for every part this release needs (all whose hook exists when forced)."""
    gen = importlib.import_module("mlx_lm.generate")
    cache = ssm_cache.cache_module()
    state = ssm_probe.extract_merge()
    plan = []
    hooks = hasattr(gen, "_merge_caches")
    if hooks and (forced or (state == "absent" and ssm_probe.history_supported())):
        plan.append(("batch-cache", "forced" if forced else
                     "ArraysCache cannot extract or merge, and the generator does both"))
    if hasattr(cache, "cache_length") and (forced or ssm_probe.history_dropped()):
        plan.append(("history-length", "cache_length counts an SSM cache with state as empty"))
    if state.startswith("broken") or (forced and state == "ok"):
        plan.append(("arrays-cache", state.removeprefix("broken: ")))
    return plan


def _install_segments(forced: bool) -> list[str]:
    """The segmented prefill where a family's padded batches leak, for every family but
    those whose padded batches the probe found exact (all of them when forced)."""
    leaks = {} if forced else ssm_probe.padding_leaks()
    leaking = {f: why for f, why in leaks.items() if why}
    if not (forced or leaking):
        return []
    exact = frozenset(f for f, why in leaks.items() if not why)
    why = "forced" if forced else "; ".join(f"{f}: {w}" for f, w in leaking.items())
    but = f", not {', '.join(sorted(exact))} (exact here)" if exact else ""
    return [ssm_segments.install(_journal, exact) + f" for SSM models{but} ({why})"]


_INSTALL = {"batch-cache": _install_batch_cache, "history-length": _install_history_length,
            "arrays-cache": _install_arrays_cache}


def _apply(forced: bool) -> PatchStatus:
    if importlib.util.find_spec("mlx_lm") is None:
        return PatchStatus(PATCH, "not-applicable", "mlx-lm is not installed")
    gen = importlib.import_module("mlx_lm.generate")
    if not hasattr(gen, "BatchGenerator"):
        return PatchStatus(PATCH, "not-applicable", "this mlx-lm has no BatchGenerator")
    done: list[str] = []
    with _journal.atomic():
        for part, why in _plan(forced):
            done += _INSTALL[part](_journal)
            done[-1] += f" ({why})"
        done += _install_segments(forced)
    if not done:
        return PatchStatus(PATCH, "skipped", "batching of SSM caches is exact here")
    return PatchStatus(PATCH, "applied", "patched " + "; ".join(done))


def _current(status: PatchStatus) -> PatchStatus:
    """The last call's status, unless another patch has replaced one of ours since."""
    lost = replaced(PATCH, _journal) if status.status == "applied" else None
    return status if lost is None else lost


def _ensure(forced: bool) -> PatchStatus:
    global _status
    with _lock:
        if _status is None:
            try:
                _status = _apply(forced)
            except Exception as exc:
                _status = PatchStatus(PATCH, "error", f"{type(exc).__name__}: {exc}")
            logger.info("[mlxcompat] mamba cache patch: %s (%s)", _status.status, _status.detail)
        return _current(_status)


def ensure_mamba_support() -> PatchStatus:
    """Apply the parts this mlx-lm needs (tried, not assumed); a second call changes nothing."""
    return _ensure(forced=False)


def patch_mlx_lm_for_mamba() -> PatchStatus:
    """Apply every part whose hook exists, needed or not (the forced, legacy entry)."""
    return _ensure(forced=True)


def mamba_patch_status() -> PatchStatus | None:
    """What the last ensure/patch call did, re-read from the targets (None before any)."""
    with _lock:
        return None if _status is None else _current(_status)


def unpatch() -> None:
    """Restore, by identity, every original whose target still holds ours; a target that
    another patch has replaced since keeps that patch's object."""
    global _status
    with _lock:
        left = _journal.undo()
        _status = None
    if left:
        logger.info("[mlxcompat] mamba unpatch left %s to the patch over ours", ", ".join(left))


__all__ = ["ensure_mamba_support", "mamba_patch_status", "patch_mlx_lm_for_mamba", "unpatch"]
