import pytest
import torch

from zoo.blocks import LocalAttention, MultiHeadAttention, causal_mask, local_mask


def _pair(dim: int, num_heads: int, window: int) -> tuple[LocalAttention, MultiHeadAttention]:
    local = LocalAttention(dim, num_heads, window=window).double()
    full = MultiHeadAttention(dim, num_heads).double()
    full.load_state_dict(local.state_dict())
    return local, full


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length", [1, 5, 13])
@pytest.mark.parametrize("window", [0, 1, 4, 30])
def test_equals_masked_full_attention(causal: bool, length: int, window: int) -> None:
    torch.manual_seed(length * 31 + window)
    local, full = _pair(8, 2, window)
    x = torch.randn(2, length, 8, dtype=torch.float64)
    mask = local_mask(length, window=window)
    if causal:
        mask = mask & causal_mask(length)
    torch.testing.assert_close(local(x, is_causal=causal), full(x, mask=mask))


@pytest.mark.parametrize("causal", [False, True])
def test_window_covering_sequence_equals_full_attention(causal: bool) -> None:
    torch.manual_seed(0)
    local, full = _pair(8, 2, window=9)
    x = torch.randn(3, 10, 8, dtype=torch.float64)
    torch.testing.assert_close(local(x, is_causal=causal), full(x, is_causal=causal))


def test_gradients_match_masked_full_attention() -> None:
    torch.manual_seed(1)
    local, full = _pair(8, 2, window=2)
    x = torch.randn(2, 11, 8, dtype=torch.float64, requires_grad=True)
    local(x).square().sum().backward()
    grad_local = x.grad.clone()
    x.grad = None
    full(x, mask=local_mask(11, window=2)).square().sum().backward()
    torch.testing.assert_close(grad_local, x.grad)
    for (name, p_local), p_full in zip(local.named_parameters(), full.parameters()):
        torch.testing.assert_close(p_local.grad, p_full.grad, msg=name)


def test_rejects_negative_window() -> None:
    with pytest.raises(ValueError, match="window"):
        LocalAttention(8, 2, window=-1)


@pytest.mark.parametrize("causal", [False, True])
def test_key_padding_mask_equals_masked_full_attention_on_real_positions(causal: bool) -> None:
    torch.manual_seed(3)
    local, full = _pair(8, 2, window=2)
    x = torch.randn(3, 11, 8, dtype=torch.float64)
    lengths = torch.tensor([11, 6, 1])
    keys = (torch.arange(11)[None, :] < lengths[:, None])[:, None, None, :]
    mask = local_mask(11, window=2) & keys
    if causal:
        mask = mask & causal_mask(11)
    ours, theirs = local(x, mask=keys, is_causal=causal), full(x, mask=mask)
    assert not ours.isnan().any()  # padded queries far from real keys still have a softmax row
    for row, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(ours[row, :n], theirs[row, :n])


def test_cached_steps_take_the_callers_mask() -> None:
    from zoo.blocks import KVCache

    torch.manual_seed(4)
    local, full = _pair(8, 2, window=1)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    cache = KVCache()
    steps = [local(x[:, t : t + 1], mask=local_mask(1, window=1, offset=t), cache=cache) for t in range(5)]
    expected = full(x, mask=local_mask(5, window=1) & causal_mask(5))
    torch.testing.assert_close(torch.cat(steps, 1), expected)
