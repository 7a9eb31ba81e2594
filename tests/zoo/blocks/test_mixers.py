import pytest
import torch

from zoo.blocks import MIXERS, Conv, Recurrent, build_mixer

DIM = 8


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_shape_backward_finite(name: str, causal: bool) -> None:
    torch.manual_seed(0)
    mixer = build_mixer(name, DIM, causal=causal, kernel_size=3, num_heads=2, layer=1)
    x = torch.randn(2, 11, DIM, requires_grad=True)
    y = mixer(x)
    assert y.shape == x.shape
    y.square().sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in mixer.parameters())


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_causal_mixers_ignore_the_future(name: str) -> None:
    torch.manual_seed(0)
    mixer = build_mixer(name, DIM, causal=True, kernel_size=3, layer=1).double()
    x = torch.randn(2, 12, DIM, dtype=torch.float64)
    changed = x.clone()
    changed[:, 7:] = torch.randn(2, 5, DIM, dtype=torch.float64)
    torch.testing.assert_close(mixer(x)[:, :7], mixer(changed)[:, :7])
    assert not torch.allclose(mixer(x)[:, 7:], mixer(changed)[:, 7:])


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_non_causal_mixers_see_the_future(name: str) -> None:
    torch.manual_seed(0)
    mixer = build_mixer(name, DIM, causal=False, kernel_size=3).double()
    x = torch.randn(1, 12, DIM, dtype=torch.float64)
    changed = x.clone()
    changed[:, 6] += 1.0
    assert not torch.allclose(mixer(x)[:, 5], mixer(changed)[:, 5])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_unrolled_recurrence_equals_torch_kernel(cell: str, causal: bool) -> None:
    torch.manual_seed(0)
    layer = Recurrent(DIM, cell=cell, causal=causal).double()
    x = torch.randn(3, 9, DIM, dtype=torch.float64)
    torch.testing.assert_close(layer.unrolled(x), layer(x))


def test_recurrent_cell_gradient_matches_torch_kernel() -> None:
    torch.manual_seed(0)
    layer = Recurrent(DIM, cell="lstm", causal=False).double()
    x = torch.randn(2, 6, DIM, dtype=torch.float64)
    grads = []
    for fn in (layer, layer.unrolled):
        layer.zero_grad()
        fn(x).sum().backward()
        grads.append([p.grad.clone() for p in layer.parameters()])
    for ours, torch_grad in zip(*grads):
        torch.testing.assert_close(ours, torch_grad)


@pytest.mark.parametrize("causal", [False, True])
def test_separable_conv_is_depthwise_then_pointwise(causal: bool) -> None:
    torch.manual_seed(0)
    sep = Conv(DIM, kernel_size=3, causal=causal, separable=True).double()
    x = torch.randn(2, 10, DIM, dtype=torch.float64)
    # Channel c of the depthwise step only sees channel c of the input.
    x_other = x.clone()
    x_other[..., 1:] = 0
    depthwise = sep.conv(torch.nn.functional.pad(x_other.transpose(1, 2), sep.padding))
    assert torch.equal(depthwise[:, 1:], sep.conv.bias[1:, None].expand(2, DIM - 1, 10))
    torch.testing.assert_close(
        sep(x),
        sep.pointwise(sep.conv(torch.nn.functional.pad(x.transpose(1, 2), sep.padding))).transpose(1, 2),
    )


def test_conv_same_padding_is_centred() -> None:
    """A 'same' kernel of 5 taps whose only nonzero tap is the last one shifts by 2."""
    conv = Conv(1, kernel_size=5, causal=False, bias=False)
    with torch.no_grad():
        conv.conv.weight.zero_()
        conv.conv.weight[0, 0, 4] = 1.0
    x = torch.arange(8.0).view(1, 8, 1)
    assert conv(x).flatten().tolist() == [2, 3, 4, 5, 6, 7, 0, 0]


@pytest.mark.parametrize(
    ("causal", "kernel_size", "dilations"),
    [(True, 3, [1, 3, 9]), (False, 3, [1, 2, 4]), (False, 5, [1, 3, 9])],
)
def test_dilated_conv_dilation_grows_with_layer(causal: bool, kernel_size: int, dilations: list[int]) -> None:
    assert [
        build_mixer("dilated_conv", DIM, causal=causal, kernel_size=kernel_size, layer=i).conv.dilation[0]
        for i in range(3)
    ] == dilations


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="odd kernel_size"):
        Conv(DIM, kernel_size=4, causal=False)
    with pytest.raises(ValueError, match="odd dim"):
        Recurrent(7, causal=False)
    with pytest.raises(ValueError, match="unknown mixer"):
        build_mixer("transformer", DIM, causal=True)
