"""Norms by name: LayerNorm and RMSNorm against their formulas and torch, with their eps."""

import pytest
import torch
from torch import nn

from zoo.blocks import NORMS, build_norm


def test_rms_norm_equals_torch_and_its_formula():
    torch.manual_seed(0)
    ours = build_norm("rms", 8, eps=1e-6)
    with torch.no_grad():
        ours.weight.normal_()
    ref = nn.RMSNorm(8, eps=1e-6)
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, 8) * 3
    torch.testing.assert_close(ours(x), ref(x))
    formula = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * ours.weight
    torch.testing.assert_close(ours(x), formula)


@pytest.mark.parametrize("eps", [1e-12, 1e-6, 1e-5])  # BERT, ViT, the torch default
def test_layer_norm_eps_reaches_the_module_and_matters_for_tiny_variance(eps):
    norm = build_norm("layer", 4, eps=eps)
    assert isinstance(norm, nn.LayerNorm) and norm.eps == eps
    x = torch.tensor([[0.0, 1e-4, 0.0, -1e-4]], dtype=torch.float64)
    expected = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps)
    torch.testing.assert_close(norm.double()(x), expected)


def test_unknown_norm_is_refused_naming_the_choices():
    assert set(NORMS) == {"layer", "rms"}
    with pytest.raises(ValueError, match="layer"):
        build_norm("batch", 4)
