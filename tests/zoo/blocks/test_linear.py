"""zoo.blocks.linear against F.linear: equal values and gradients on oneDNN, the very same
computation wherever it falls back, and the backend switch."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from zoo.blocks import linear as linear_module
from zoo.blocks.linear import MIN_MACS, Linear, backend, linear

needs_onednn = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN"
)


@pytest.fixture
def use(monkeypatch):
    """Sets ZOO_CPU_LINEAR for one test, and counts the products that reach oneDNN."""
    calls = []
    product = linear_module._product
    monkeypatch.setattr(linear_module, "_product", lambda *a: calls.append(1) or product(*a))

    def choose(name: str) -> list:
        monkeypatch.setenv("ZOO_CPU_LINEAR", name)
        backend.cache_clear()
        return calls

    yield choose
    backend.cache_clear()


IN, OUT = 128, 512  # 16 rows reach MIN_MACS


def inputs(*shape, transpose=False, sizes=(IN, OUT)):
    torch.manual_seed(0)
    in_dim, out_dim = sizes
    x = torch.randn(*shape, in_dim)
    if transpose:  # a strided view, as a transposed activation is
        x = torch.randn(in_dim, *shape).movedim(0, -1)
    weight = torch.randn(out_dim, in_dim, requires_grad=True)
    bias = torch.randn(out_dim, requires_grad=True)
    return x.requires_grad_(), weight, bias


@needs_onednn
@pytest.mark.parametrize("sizes", [(IN, OUT), (OUT, IN)], ids=["widening", "narrowing"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("with_bias", [True, False])
def test_onednn_values_and_gradients_equal_f_linear(use, with_bias, transpose, sizes):
    """Both ways of the weight's gradient (zoo.blocks.linear._weight_grad): a widening layer's
    and a narrowing one's."""
    calls = use("onednn")
    x, weight, bias = inputs(3, 7, transpose=transpose, sizes=sizes)
    bias = bias if with_bias else None
    grad_out = torch.randn(3, 7, sizes[1])
    out = linear(x, weight, bias)
    grads = torch.autograd.grad(out, [x, weight] + ([bias] if with_bias else []), grad_out)
    assert len(calls) == 3  # the forward and both gradients' products
    ref = F.linear(x, weight, bias)
    ref_grads = torch.autograd.grad(ref, [x, weight] + ([bias] if with_bias else []), grad_out)
    # sums of 128 or 512 products of unit normals, in another order: float32 rounding of ~1e-5
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-4)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


@needs_onednn
def test_a_broadcast_upstream_gradient_is_handled(use):
    use("onednn")
    x, weight, bias = inputs(5, 6)
    linear(x, weight, bias).sum().backward()  # the gradient arrives with zero strides
    got = [t.grad.clone() for t in (x, weight, bias)]
    for t in (x, weight, bias):
        t.grad = None
    F.linear(x, weight, bias).sum().backward()
    for g, t in zip(got, (x, weight, bias)):
        torch.testing.assert_close(g, t.grad, rtol=1e-5, atol=1e-4)


@needs_onednn
@pytest.mark.parametrize(
    "case",
    ["float64", "small product", "autocast", "backend torch"],
)
def test_falls_back_to_the_very_f_linear(use, case):
    calls = use("torch" if case == "backend torch" else "onednn")
    x, weight, bias = inputs(MIN_MACS // (IN * OUT) - 1 if case == "small product" else 32)
    if case == "float64":
        x, weight, bias = (t.detach().double() for t in (x, weight, bias))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=case == "autocast"):
        out, ref = linear(x, weight, bias), F.linear(x, weight, bias)
    assert calls == []
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


@needs_onednn
def test_inference_mode_takes_onednn(use):
    calls = use("onednn")
    x, weight, bias = inputs(32)
    with torch.inference_mode():
        out = linear(x, weight, bias)
    assert calls == [1] and not out.requires_grad
    torch.testing.assert_close(out, F.linear(x, weight, bias).detach(), rtol=1e-5, atol=1e-5)


def test_an_unknown_backend_is_refused_naming_the_variable(use):
    with pytest.raises(ValueError, match="ZOO_CPU_LINEAR='blas'"):
        use("blas")
        backend()


def test_linear_module_is_an_nn_linear_with_its_state_dict():
    torch.manual_seed(0)
    ours = Linear(5, 3)
    torch.manual_seed(0)
    plain = nn.Linear(5, 3)
    assert isinstance(ours, nn.Linear)
    assert ours.state_dict().keys() == plain.state_dict().keys()
    torch.testing.assert_close(ours.weight, plain.weight, rtol=0, atol=0)  # the same init


@needs_onednn
def test_flop_counter_sees_the_product(use):
    """Counting modes (Table 1's FLOP measurements) see F.linear, not an op they cannot count."""
    from torch.utils.flop_counter import FlopCounterMode

    calls = use("onednn")
    x, weight, bias = inputs(32)
    with FlopCounterMode(display=False) as counter:
        linear(x, weight, bias)
    assert calls == [] and counter.get_total_flops() == 2 * 32 * IN * OUT


def test_a_column_major_weight_takes_f_linear_equal_to_row_major(use):
    calls = use("onednn")
    x, weight, bias = inputs(32)
    column_major = weight.detach().t().contiguous().t()
    out = linear(x, column_major, bias)
    assert calls == []
    torch.testing.assert_close(out, F.linear(x, weight, bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("inference", [False, True])
def test_single_row_weights_of_a_cached_size_go_column_major_and_come_back_trainable(use, inference):
    use("onednn")
    model = nn.Sequential(nn.Embedding(10, IN), nn.LayerNorm(IN), Linear(IN, OUT))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    params = dict(model.named_parameters())
    x = torch.tensor([[3]])
    with torch.inference_mode(inference), linear_module.single_row_weights(model):
        for name, p in model.named_parameters():
            assert p is params[name] and torch.equal(p, before[name])
        assert model[2].weight.stride() == (1, OUT)  # the product's weight, column-major
        assert model[0].weight.is_contiguous()  # a lookup's stays row-major
        inside = model(x)
    assert all(p.is_contiguous() and torch.equal(p, before[n]) for n, p in model.named_parameters())
    torch.testing.assert_close(inside, model(x).detach(), rtol=1e-5, atol=1e-5)
    model(x).sum().backward()  # an inference tensor left in a parameter would refuse this
    assert model[2].weight.grad is not None


class TiedLookup(nn.Module):
    """An embedding its model also multiplies by, named as GPT names its tied output projection."""

    def __init__(self, multiplied: bool) -> None:
        super().__init__()
        self.tokens = nn.Embedding(OUT, IN)
        self.multiplied = multiplied

    @property
    def output_product_weight(self) -> torch.Tensor | None:
        return self.tokens.weight if self.multiplied else None


@pytest.mark.parametrize("multiplied", [True, False])
def test_single_row_weights_move_a_named_output_projection_even_inside_a_wrapper(use, multiplied):
    use("onednn")
    inner = TiedLookup(multiplied)
    with linear_module.single_row_weights(nn.ModuleList([inner])):
        assert inner.tokens.weight.is_contiguous() != multiplied  # column-major only if multiplied
    assert inner.tokens.weight.is_contiguous()


def test_single_row_weights_change_nothing_on_backend_torch(use):
    use("torch")
    model = Linear(IN, OUT)
    with linear_module.single_row_weights(model):
        assert model.weight.is_contiguous() and not linear_module._split_contexts


def test_single_row_weights_beyond_the_cache_split_one_row_products_in_place(use, monkeypatch):
    """Past the cache's size the layout stays row-major and a one-row product is equal parts in one
    batched call, equal to F.linear; more rows, a prime count of outputs, or leaving the
    context take the usual paths."""
    use("onednn")
    monkeypatch.setattr(linear_module, "cache_bytes", lambda: 0)
    split = []
    product = linear_module.split_product
    monkeypatch.setattr(linear_module, "split_product", lambda *a: split.append(1) or product(*a))
    model, prime = Linear(IN, OUT), Linear(IN, 67)
    x = torch.randn(1, 1, IN)
    with torch.no_grad(), linear_module.single_row_weights(nn.Sequential(model, prime)):
        assert model.weight.is_contiguous()
        torch.testing.assert_close(model(x), F.linear(x, model.weight, model.bias), rtol=1e-5, atol=1e-5)
        assert split == [1]
        model(torch.randn(2, IN)), prime(x)
        assert split == [1]
    model(x)
    assert split == [1] and not linear_module._split_contexts


def test_nested_single_row_weights_keep_splitting_until_the_last_leaves(use, monkeypatch):
    use("onednn")
    monkeypatch.setattr(linear_module, "cache_bytes", lambda: 0)
    model = Linear(IN, OUT)
    with linear_module.single_row_weights(model):
        with linear_module.single_row_weights(model):
            pass
        assert linear_module._split_contexts == 1
    assert not linear_module._split_contexts


@pytest.mark.parametrize("rows, parts", [(512, 2), (50257, 29), (51, 3), (67, 0)])
def test_split_product_cuts_rows_into_equal_parts_and_equals_f_linear(rows, parts):
    assert linear_module.split_parts(rows) == parts
    if parts:
        x, weight, bias = torch.randn(1, IN), torch.randn(rows, IN), torch.randn(rows)
        got = linear_module.split_product(x, weight, bias)
        torch.testing.assert_close(got, F.linear(x, weight, bias), rtol=1e-5, atol=1e-4)


def test_cache_bytes_reads_the_last_level_from_sysfs_else_assumes_the_default(tmp_path):
    for index, (level, size) in enumerate([(1, "48K"), (2, "1024K"), (3, "32768K")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "size").write_text(f"{size}\n")
    assert linear_module.cache_bytes.__wrapped__(tmp_path) == 32 << 20
    (tmp_path / "index3").mkdir()
    (tmp_path / "index3" / "level").write_text("4\n")
    (tmp_path / "index3" / "size").write_text("1M\n")
    assert linear_module.cache_bytes.__wrapped__(tmp_path) == 1 << 20
    missing = tmp_path / "none"
    assert linear_module.cache_bytes.__wrapped__(missing) == linear_module.DEFAULT_CACHE_BYTES
