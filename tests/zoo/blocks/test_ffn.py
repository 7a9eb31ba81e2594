"""The position-wise feed-forward network (the paper's eq. 2) against its formula."""

import math

import pytest
import torch
from torch import nn

from zoo.blocks import ACTIVATIONS, FeedForward


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_equals_the_formula_position_by_position(activation):
    torch.manual_seed(0)
    ffn = FeedForward(6, 10, activation=activation).eval()
    x = torch.randn(2, 5, 6)
    act = {
        "relu": torch.relu,
        "gelu": nn.functional.gelu,
        # GPT-2's gelu_new, written out: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        "gelu_tanh": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    }[activation]
    expected = act(x @ ffn.fc1.weight.T + ffn.fc1.bias) @ ffn.fc2.weight.T + ffn.fc2.bias
    torch.testing.assert_close(ffn(x), expected)
    torch.testing.assert_close(ffn(x[:, 3:4]), ffn(x)[:, 3:4])  # each position alone


def test_bias_switch_dropout_and_unknown_activation():
    torch.manual_seed(0)
    ffn = FeedForward(4, 64, bias=False, dropout=0.5)
    assert ffn.fc1.bias is None and ffn.fc2.bias is None
    x = torch.randn(3, 4)
    assert not torch.equal(ffn.train()(x), ffn.eval()(x))  # dropout acts in training only
    torch.testing.assert_close(ffn(x), ffn(x), rtol=0, atol=0)
    with pytest.raises(ValueError, match="activation"):
        FeedForward(4, 8, activation="tanh")
