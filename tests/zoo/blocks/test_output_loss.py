"""The fused projection + label-smoothed cross-entropy against the unfused reference."""

import pytest
import torch

from zoo.blocks import linear_cross_entropy, output_loss
from zoo.blocks.cross_entropy import label_smoothed_cross_entropy
from zoo.models import ModelConfig, build_model


def reference(hidden, weight, target, smoothing, ignore_index):
    return label_smoothed_cross_entropy(
        hidden @ weight.T, target, smoothing=smoothing, ignore_index=ignore_index
    )


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("chunk_rows", [3, output_loss.CPU_CHUNK_ROWS])  # 3: many chunks, a remainder
def test_loss_nll_and_gradients_equal_the_unfused_reference(smoothing, chunk_rows, monkeypatch):
    monkeypatch.setattr(output_loss, "CPU_CHUNK_ROWS", chunk_rows)
    torch.manual_seed(0)
    hidden = torch.randn(2, 7, 5, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(13, 5, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 13, (2, 7))
    target[1, 4:] = 0
    ref = reference(hidden, weight, target, smoothing, 0)
    ref_grads = torch.autograd.grad(ref[0] * 3.0, (hidden, weight))
    got = linear_cross_entropy(hidden, weight, target, smoothing=smoothing, ignore_index=0)
    grads = torch.autograd.grad(got.loss * 3.0, (hidden, weight))  # a scaled upstream gradient
    torch.testing.assert_close(got.loss.double(), ref[0])
    torch.testing.assert_close(got.nll.double(), ref[1])
    assert got.units == ref[2] == 11
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r)
    assert grads[0][1, 4:].abs().sum() == 0  # padding rows get no gradient


# torch's own products, and oneDNN's where zoo.blocks.linear routes them there
PRODUCTS = ("aten::mm", "aten::addmm", "aten::addmm_", "mkldnn::_linear_pointwise")


def matrix_products(fn) -> int:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages() if e.key in PRODUCTS)


def test_no_gradient_work_without_grad_mode():
    hidden = torch.randn(4, 3, requires_grad=True)
    weight = torch.randn(6, 3, requires_grad=True)
    target = torch.tensor([1, 2, 3, 4])
    # One chunk: the logits' product alone without grad mode, two more (for the hidden states
    # and the weight) with it.
    assert matrix_products(lambda: linear_cross_entropy(hidden, weight, target)) == 3
    with torch.no_grad():
        assert matrix_products(lambda: linear_cross_entropy(hidden, weight, target)) == 1
        sums = linear_cross_entropy(hidden, weight, target)
    assert not sums.loss.requires_grad
    torch.testing.assert_close(sums.loss, reference(hidden, weight, target, 0.0, -100)[0])


def test_bf16_autocast_is_close_to_fp32():
    torch.manual_seed(1)
    hidden, weight = torch.randn(40, 16, requires_grad=True), torch.randn(50, 16, requires_grad=True)
    target = torch.randint(0, 50, (40,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = linear_cross_entropy(hidden, weight, target, smoothing=0.1)
    got.loss.backward()
    ref = reference(hidden, weight, target, 0.1, -100)[0]
    assert got.loss.dtype == torch.float32 and weight.grad.dtype == torch.float32
    torch.testing.assert_close(got.loss, ref, rtol=2e-2, atol=0.0)


def test_the_transformer_given_targets_returns_the_loss_of_its_logits():
    torch.manual_seed(2)
    cfg = ModelConfig(
        encoder_layers=1, decoder_layers=1, dim=16, ffn_dim=32, num_heads=2, dropout=0.0, max_len=32
    )
    model = build_model(cfg, 30, 30, 0).double()
    src, tgt = torch.randint(4, 30, (3, 6)), torch.randint(4, 30, (3, 5))
    tgt[0, 3:] = 0
    ref = label_smoothed_cross_entropy(model(src, tgt[:, :-1]), tgt[:, 1:], smoothing=0.1, ignore_index=0)
    ref_grad = torch.autograd.grad(ref[0], model.output.weight)[0]
    sums = model(src, tgt[:, :-1], tgt[:, 1:], smoothing=0.1)
    torch.testing.assert_close(sums.loss.double(), ref[0])
    torch.testing.assert_close(torch.autograd.grad(sums.loss, model.output.weight)[0], ref_grad)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")
def test_onednn_products_give_the_torch_products_loss_and_gradients(monkeypatch):
    from zoo.blocks import linear as linear_module
    from zoo.blocks.linear import backend

    calls = []
    product = linear_module._product
    monkeypatch.setattr(linear_module, "_product", lambda *a: calls.append(1) or product(*a))
    torch.manual_seed(0)
    hidden = torch.randn(300, 16, requires_grad=True)  # two chunks of 256 rows
    weight = torch.randn(50, 16, requires_grad=True)
    target = torch.randint(0, 50, (300,))
    results = {}
    for name in ("torch", "onednn"):
        monkeypatch.setenv("ZOO_CPU_LINEAR", name)
        backend.cache_clear()
        sums = linear_cross_entropy(hidden, weight, target, smoothing=0.1)
        results[name] = (sums.loss, *torch.autograd.grad(sums.loss, (hidden, weight)))
    backend.cache_clear()
    assert len(calls) == 2 * 3  # each chunk's logits, hidden and weight gradients on oneDNN
    for got, want in zip(results["onednn"], results["torch"]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_compiled_loss_is_one_graph_and_equals_the_fused_loss():
    import torch._dynamo as dynamo

    torch.manual_seed(0)
    hidden = torch.randn(3, 6, 8, requires_grad=True)
    weight = torch.randn(17, 8, requires_grad=True)
    target = torch.randint(1, 17, (3, 6))
    target[2, 3:] = 0

    def loss(hidden, weight, target):
        return linear_cross_entropy(hidden, weight, target, smoothing=0.1, ignore_index=0)

    explained = dynamo.explain(loss)(hidden, weight, target)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    dynamo.reset()
    fused = loss(hidden, weight, target)
    traced = torch.compile(loss, backend="eager", fullgraph=True)(hidden, weight, target)
    for got, want in zip(traced, fused):
        torch.testing.assert_close(got, want)
    grads = torch.autograd.grad(traced.loss, (hidden, weight))
    for got, want in zip(grads, torch.autograd.grad(fused.loss, (hidden, weight))):
        torch.testing.assert_close(got, want)
