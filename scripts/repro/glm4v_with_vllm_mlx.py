"""Defect: GLM4V status comes from our marker, not from what is installed (issue 24).

Bare: stdlib, mlx, mlx_vlm, our patch modules and vllm-mlx 0.6.0's GLM4V patch module (the
real package, installed `--no-deps --target DIR` as the harness installs subjects; only that
one module file is imported). Both orders, in one process:

    uv pip install --no-deps --target /tmp/vllm-mlx-0.6.0 vllm-mlx==0.6.0
    PYTHONPATH=src python scripts/repro/glm4v_with_vllm_mlx.py /tmp/vllm-mlx-0.6.0
"""

from __future__ import annotations

import importlib
import sys

from mlxcompat.patches import glm4v_moe, glm4v_probe

language = importlib.import_module("mlx_vlm.models.glm4v_moe.language")
MODEL, OUTER = language.GLM4VModel, language.LanguageModel
UPSTREAM = {cls: vars(cls)["__call__"] for cls in (MODEL, OUTER)}


def who(obj: object) -> str:
    """The layers installed, outermost first, by where their code lives (functools.wraps
    copies names, so a wrapper's __qualname__ would name what it wraps)."""
    layers = []
    while obj is not None:
        if any(obj is original for original in UPSTREAM.values()):
            layers.append("upstream")
            break
        path = obj.__code__.co_filename
        owner = ("ours" if "mlxcompat" in path else "vllm-mlx" if "vllm_mlx" in path
                 else path)
        layers.append(f"{owner} ({obj.__code__.co_qualname})")
        obj = getattr(obj, "__wrapped__", None)
    return " -> ".join(layers)


def show(label: str) -> None:
    status = glm4v_moe.glm4v_patch_status()
    print(f"  {label}")
    print(f"    our status: {status.status} | {status.detail}")
    print(f"    GLM4VModel.__call__ is {who(vars(MODEL)['__call__'])}")
    print(f"    LanguageModel.__call__ is {who(vars(OUTER)['__call__'])}")
    print(f"    GLM4VModel._batch_patched (vllm-mlx's marker): {vars(MODEL).get('_batch_patched')}")
    print(f"    inner path batches right (our probe): {glm4v_probe.inner_is_right(MODEL.__call__)}")


def reset() -> None:
    """The script's own cleanup between orders (vllm-mlx offers no unpatch)."""
    glm4v_moe.unpatch()
    for cls, original in UPSTREAM.items():
        cls.__call__ = original
    if "_batch_patched" in vars(MODEL):
        del MODEL._batch_patched


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    vllm = importlib.import_module("vllm_mlx.patches.glm4v_moe_mllm")
    print("vllm-mlx from", vllm.__file__)
    print("mlx-vlm", importlib.import_module("mlx_vlm").__version__)

    print("== ours, then vllm-mlx's")
    glm4v_moe.ensure_glm4v_support()
    vllm.patch_glm4v_moe_for_batching()
    show("both applied")
    glm4v_moe.unpatch()
    show("after our unpatch()")
    again = vllm.patch_glm4v_moe_for_batching()
    print(f"    vllm-mlx applies again: returns {again}, its __call__ installed: "
          f"{who(vars(MODEL)['__call__']).startswith('vllm-mlx')}")
    reset()

    print("== vllm-mlx's, then ours")
    vllm.patch_glm4v_moe_for_batching()
    status = glm4v_moe.ensure_glm4v_support()
    print(f"    ensure returned: {status.status} | {status.detail}")
    show("both applied")
    glm4v_moe.unpatch()
    show("after our unpatch()")
    reset()


if __name__ == "__main__":
    main()
