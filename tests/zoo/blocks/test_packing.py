"""The encoder's feed-forward on real tokens alone (zoo.blocks.packing): real positions and their
gradients as the padded forward gives them; drop path, per sequence, is never packed."""

import pytest
import torch

from zoo.blocks import Encoder, LayerSpec, init_transformer_, lengths_mask
from zoo.blocks.packing import RealTokens

D, H, FF = 16, 4, 32


def encoder(pre_norm: bool, drop_path: float = 0.0) -> Encoder:
    torch.manual_seed(0)
    enc = Encoder.uniform(3, LayerSpec(D, H, FF, dropout=0.0, pre_norm=pre_norm), drop_path_rate=drop_path)
    init_transformer_(enc)
    return enc.double()


def unpacked(enc: Encoder, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The stack's forward with every position through every sublayer (the reference)."""
    for layer in enc.layers:
        x = layer(x, mask=mask)
    return enc._finish(x)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_real_positions_and_gradients_equal_the_padded_forward(pre_norm):
    enc = encoder(pre_norm)
    lengths = torch.tensor([7, 3, 5])
    real, mask = lengths_mask(lengths, 7)[:, 0, 0], lengths_mask(lengths, 7)
    x = torch.randn(3, 7, D, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(3, 7, D, dtype=torch.float64) * real[..., None]  # a loss on real positions

    (packed_out := enc(x, pad_mask=mask)).mul(weights).sum().backward()
    packed_grads = [x.grad.clone()] + [p.grad.clone() for p in enc.parameters()]
    x.grad = None
    enc.zero_grad()
    (reference := unpacked(enc, x, mask)).mul(weights).sum().backward()
    reference_grads = [x.grad] + [p.grad for p in enc.parameters()]

    torch.testing.assert_close(packed_out[real], reference[real], rtol=0, atol=1e-12)
    for got, want in zip(packed_grads, reference_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_padding_positions_skip_the_feed_forward():
    """What makes it cheaper: the feed-forward sees the real tokens only."""
    enc = encoder(pre_norm=False)
    seen = []
    enc.layers[0].ffn.register_forward_hook(lambda module, args, out: seen.append(args[0].shape))
    enc(torch.randn(2, 6, D, dtype=torch.float64), pad_mask=lengths_mask(torch.tensor([6, 2]), 6))
    assert seen == [torch.Size([8, D])]


def test_nothing_to_skip_gives_no_packing():
    x = torch.randn(2, 4, D)
    assert RealTokens.of_padding(None, x) is None
    assert RealTokens.of_padding(lengths_mask(torch.tensor([4, 4]), 4), x) is None
    assert RealTokens.of_padding(torch.ones(2, 1, 4, 4, dtype=torch.bool), x) is None  # not key padding
    assert RealTokens.of_padding(lengths_mask(torch.tensor([4, 1]), 4), x).index.tolist() == [0, 1, 2, 3, 4]


def test_drop_path_layers_are_not_packed():
    """Drop path keeps or drops a whole sequence's update: packed, it would draw per token."""
    enc = encoder(pre_norm=True, drop_path=0.5).train()  # rates 0, 0.25, 0.5 over the layers
    seen = []
    for layer in enc.layers:
        layer.ffn.register_forward_hook(lambda module, args, out: seen.append(tuple(args[0].shape)))
    enc(torch.randn(2, 5, D, dtype=torch.float64), pad_mask=lengths_mask(torch.tensor([5, 2]), 5))
    assert seen == [(7, D), (2, 5, D), (2, 5, D)]


def test_a_compiled_encoder_traces_one_graph_and_equals_eager_at_real_tokens():
    """Under torch.compile the packing steps aside (its token count is data): no graph break."""
    enc = encoder(pre_norm=False).float().eval()
    mask = lengths_mask(torch.tensor([5, 2]), 5)
    x = torch.randn(2, 5, D)
    compiled = torch.compile(enc, fullgraph=True, backend="eager")
    real = mask[:, 0, 0]
    torch.testing.assert_close(compiled(x, pad_mask=mask)[real], enc(x, pad_mask=mask)[real])
