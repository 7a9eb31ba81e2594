"""softmax_last against torch's softmax: the same values and gradients at every width, padded or not."""

import pytest
import torch

from zoo.blocks import softmax as softmax_module
from zoo.blocks.softmax import SHORTEST_PADDED, VECTOR, softmax_last


@pytest.mark.parametrize("width", [1, 2, SHORTEST_PADDED, 7, VECTOR - 1, VECTOR, VECTOR + 3])
def test_equals_torch_softmax_with_gradients(width, monkeypatch):
    torch.manual_seed(0)
    x = torch.randn(5, 3, width) * 4
    x[0, 0, : width // 2] = float("-inf")  # masked keys, as attention gives them
    x.requires_grad_(True)
    pads = []
    real_pad = softmax_module.F.pad
    monkeypatch.setattr(softmax_module.F, "pad", lambda *a, **k: pads.append(1) or real_pad(*a, **k))
    out = softmax_last(x)
    grad = torch.randn_like(out)
    (got,) = torch.autograd.grad(out, x, grad)
    assert bool(pads) == (SHORTEST_PADDED <= width < VECTOR)
    (expected,) = torch.autograd.grad(x.softmax(dim=-1), x, grad)
    torch.testing.assert_close(out, x.softmax(dim=-1), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_a_fully_masked_row_is_nan_as_in_torch():
    x = torch.full((2, 5), float("-inf"))
    x[1] = torch.arange(5.0)
    assert torch.equal(softmax_last(x).isnan(), x.softmax(dim=-1).isnan())


def test_other_dtypes_are_torch_softmax_itself():
    x = torch.randn(4, 6, dtype=torch.float64)
    assert torch.equal(softmax_last(x), x.softmax(dim=-1))
