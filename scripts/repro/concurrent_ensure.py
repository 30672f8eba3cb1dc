"""Defect: several threads calling an entry point at once all apply (issue 24).

Bare: stdlib, mlx, mlx_lm (and mlx_vlm where installed) and our patch modules, no harness.
N threads released together by a Barrier call each entry point; printed: every status, the
journal's length and how deep each target is wrapped (1 is right, 2 means wrapped twice).

    PYTHONPATH=src python scripts/repro/concurrent_ensure.py [N]
"""

from __future__ import annotations

import importlib
import sys
import threading

import mlx.core as mx

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
MAMBA = ["mlx_lm.generate:_make_cache", "mlx_lm.generate:_merge_caches",
         "mlx_lm.models.cache:cache_length", "mlx_lm.generate:BatchGenerator._process_prompts",
         "mlx_lm.generate:PromptProcessingBatch.prompt", "mlx_lm.models.cache:ArraysCache.merge",
         "mlx_lm.models.cache:ArraysCache.extract"]
GLM4V = ["mlx_vlm.models.glm4v_moe.language:GLM4VModel.__call__",
         "mlx_vlm.models.glm4v_moe.language:LanguageModel.__call__"]


def _owner(target: str) -> tuple[object, str] | None:
    module, _, path = target.partition(":")
    owner: object = importlib.import_module(module)
    *parents, name = path.split(".")
    for part in parents:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner, name


def _installed(targets: list[str]) -> dict[str, object]:
    found = {}
    for target in targets:
        where = _owner(target)
        if where is not None and where[1] in vars(where[0]):
            found[target] = vars(where[0])[where[1]]
    return found


def _depth(now: object, original: object) -> int:
    """How many wrappers sit between the installed object and the original."""
    unwrap = getattr(original, "__func__", original)
    depth, obj = 0, getattr(now, "__func__", now)
    while obj is not unwrap and obj is not None:
        obj, depth = getattr(obj, "__wrapped__", None), depth + 1
    return depth


def race(label: str, entry: object, module: object, targets: list[str]) -> None:
    before = _installed(targets)
    barrier = threading.Barrier(THREADS)
    statuses: list[object] = []

    def call() -> None:
        barrier.wait()
        try:
            statuses.append(entry())
        finally:  # mlx >= 0.32: a thread frees its own streams, or the process aborts at exit
            getattr(mx, "clear_streams", lambda: None)()

    workers = [threading.Thread(target=call) for _ in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(f"== {label}: {THREADS} threads")
    for s in statuses:
        print("  returned:", getattr(s, "status", s), "|", getattr(s, "detail", "")[:90])
    print("  journal entries:", len(module._journal._entries))
    for target, now in _installed(targets).items():
        if now is not before.get(target):
            print(f"  {target} wrapped {_depth(now, before[target])} deep")
    module.unpatch()
    restored = all(_installed(targets).get(t) is o for t, o in before.items())
    print("  after unpatch, every original back by identity:", restored)


def main() -> None:
    from mlxcompat.patches import mamba_cache

    lm = importlib.import_module("mlx_lm").__version__
    print(f"mlx {mx.__version__}, mlx-lm {lm}")
    race("ensure_mamba_support", mamba_cache.ensure_mamba_support, mamba_cache, MAMBA)
    race("patch_mlx_lm_for_mamba", mamba_cache.patch_mlx_lm_for_mamba, mamba_cache, MAMBA)
    if importlib.util.find_spec("mlx_vlm") is not None:
        from mlxcompat.patches import glm4v_moe

        print("mlx-vlm", importlib.import_module("mlx_vlm").__version__)
        race("ensure_glm4v_support", glm4v_moe.ensure_glm4v_support, glm4v_moe, GLM4V)
        race("patch_glm4v_moe_for_batching", glm4v_moe.patch_glm4v_moe_for_batching,
             glm4v_moe, GLM4V)


if __name__ == "__main__":
    main()
