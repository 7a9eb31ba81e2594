"""MultiHeadAttention under pytest-benchmark (bench/conftest.py): forward + backward, zoo against
torch.nn.MultiheadAttention (SDPA inside both), at bench.attention_speed's sizes, causal and
not; bf16 tensors at --bench-precision bf16."""

from functools import cache

import pytest
import torch

from bench.attention_speed import SIZES, contenders

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


@pytest.fixture(scope="module")
def pair():
    """The two contenders of one shape, built once however many tests ask for them."""
    return cache(contenders)


@pytest.mark.parametrize("engine", ["zoo", "torch"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "B{}-T{}-D{}-H{}".format(*s))
def test_forward_backward(measure, pair, precision: str, size: tuple, causal: bool, engine: str) -> None:
    b, t, d, h = size
    step = pair(b, t, d, h, causal, "cpu", DTYPES[precision])[engine]
    what = f"attention fwd+bwd B={b} T={t} D={d} H={h}{' causal' if causal else ''}"
    out = measure(step, what, engine, b * t, precision=precision)
    assert out.shape == (b, t, d) and torch.isfinite(out).all()
