"""zoo's Dropout against nn.Dropout's contract: rate, scaling, gradient, eval identity, seeding."""

import pytest
import torch

from zoo.blocks import Dropout


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drops_at_rate_p_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    y = Dropout(p).train()(torch.ones(400, 1000))
    assert abs((y == 0).float().mean().item() - p) < 0.003
    kept = y[y != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, kept[0].item()))  # one scale for all
    assert abs(y.mean().item() - 1.0) < 0.01
    assert abs(kept[0].item() - 1 / (1 - p)) < 1e-3


def test_gradient_is_the_mask_times_the_scale():
    torch.manual_seed(1)
    x = torch.randn(64, 33, requires_grad=True)
    y = Dropout(0.25).train()(x)
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, torch.where(y != 0, y / x, 0.0).detach())


def test_identity_in_eval_mode_and_at_p_zero_and_zero_at_p_one():
    x = torch.randn(5, 7)
    assert torch.equal(Dropout(0.5).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_masks_follow_the_torch_seed():
    d, x = Dropout(0.3).train(), torch.ones(3, 50, 9)  # an odd element count
    torch.manual_seed(7)
    a = d(x)
    torch.manual_seed(7)
    assert torch.equal(a, d(x))
    assert not torch.equal(a, d(x))


def test_rejects_a_probability_outside_0_1():
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.5)


def test_traces_under_torch_compile_without_a_graph_break():
    """The CPU mask's in-place random_ cannot be traced; compiled code takes F.dropout instead."""
    import torch._dynamo as dynamo

    model = torch.nn.Sequential(
        torch.nn.Linear(8, 8), Dropout(0.5), torch.nn.Linear(8, 8), Dropout(0.5)
    ).train()
    explained = dynamo.explain(model)(torch.randn(4, 8))
    assert explained.graph_break_count == 0 and explained.graph_count == 1


def test_attention_dropout_on_cpu_drops_weights_at_rate_p_and_keeps_the_expectation():
    """Training attention with dropout on the weights (the written-out path with the cheap mask,
    key padding included): the mean of many draws is the eval-mode output, and a draw differs."""
    from zoo.blocks import MultiHeadAttention, lengths_mask

    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2, dropout=0.3).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    mask = lengths_mask(torch.tensor([5, 3]), 5)
    expected = attn.eval()(x, mask=mask)
    attn.train()
    draws = torch.stack([attn(x, mask=mask) for _ in range(4000)])
    assert not torch.allclose(draws[0], expected, atol=1e-3)
    torch.testing.assert_close(draws.mean(0), expected, rtol=0, atol=0.03)
