"""MoE experts stay float32 in every dtype (mlx's CPU gather_mm / gather_qmm take float32
only), everything else takes the dtype; the rows say so."""

from __future__ import annotations

import pytest

mx = pytest.importorskip("mlx.core")

from mlxcompat.checks.dtypes import EXPERTS_NOTE, has_experts, model_in  # noqa: E402

FACTORY = "mlxcompat.models.lm:granitemoehybrid"


def _weights(net, experts: bool) -> set[str]:
    found = set()
    for _, module in net.named_modules():
        if (type(module).__name__ == "SwitchLinear") == experts and "weight" in module:
            found.add(str(module["weight"].dtype))
    return found


def test_experts_keep_float32_where_the_rest_is_bfloat16() -> None:
    net = model_in(FACTORY, "bfloat16")
    assert has_experts(net)
    assert _weights(net, experts=True) == {"mlx.core.float32"}
    assert "mlx.core.bfloat16" in _weights(net, experts=False)


def test_experts_are_not_quantized() -> None:
    net = model_in(FACTORY, "q4")
    kinds = {type(m).__name__ for _, m in net.named_modules()}
    assert "SwitchLinear" in kinds and "QuantizedSwitchLinear" not in kinds
    assert "QuantizedLinear" in kinds
    assert "float32" in EXPERTS_NOTE
