"""int8 inference (zoo.quantize) on small random models: the layers it swaps and keeps, logits
close to float32's, and greedy decoding with the KV cache consistent with the int8 model's own
uncached forward."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

from zoo.blocks.linear import backend
from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.decode import GenerationConfig, generate, greedy_search
from zoo.models import ModelConfig, build_model
from zoo.models.bert import Bert
from zoo.models.bert_heads import BertForTokenClassification
from zoo.models.gpt import GPT
from zoo.quantize import FULL_RANGE, ONE_ROW_BF16, input_ranges, quantize_int8, smooth

VOCAB = 40


def translation_model(arch: str = "transformer") -> nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(encoder_layers=2, decoder_layers=2, dim=64, ffn_dim=128, num_heads=4, dropout=0.0,
                      max_len=64, arch=arch, rnn_dim=64)  # fmt: skip
    return build_model(cfg, VOCAB, VOCAB, SPECIAL_IDS.pad).eval()


def gpt_model() -> GPT:
    torch.manual_seed(0)
    return GPT(vocab_size=VOCAB, dim=64, num_layers=2, num_heads=4, ffn_dim=128, max_len=64, dropout=0.0,
               attn_dropout=0.0).eval()  # fmt: skip


def tagger() -> BertForTokenClassification:
    torch.manual_seed(0)
    bert = Bert(vocab_size=VOCAB, dim=64, num_layers=2, num_heads=4, ffn_dim=128, max_len=64, dropout=0.0,
                attn_dropout=0.0)  # fmt: skip
    return BertForTokenClassification(bert, num_labels=5, dropout=0.0).eval()


def ids(rows: int, length: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(
        SPECIAL_IDS.eos + 1, VOCAB, (rows, length), generator=torch.Generator().manual_seed(seed)
    )


def min_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """The lowest cosine similarity between matching rows (the last dimension) of a and b."""
    return F.cosine_similarity(a.flatten(0, -2), b.flatten(0, -2), dim=-1).min().item()


@pytest.mark.parametrize("arch", ["transformer", "rnn"])  # both read a cross_attn's weight as a tensor
@torch.no_grad()
def test_translation_logits_stay_close_to_float32(arch):
    model = translation_model(arch)
    src, tgt = ids(3, 12), ids(3, 9, seed=2)
    quantized = quantize_int8(copy.deepcopy(model))
    assert min_cosine(quantized(src, tgt), model(src, tgt)) > 0.99


@torch.no_grad()
def test_gpt_logits_stay_close_to_float32():
    model = gpt_model()
    x = ids(3, 20)
    quantized = quantize_int8(copy.deepcopy(model))
    assert isinstance(quantized.int8_output, Int8Linear)  # the tied output projection too
    assert min_cosine(quantized(x), model(x)) > 0.99
    assert torch.equal(quantized.tokens.weight, model.tokens.weight)  # the embeddings stay float32
    targets = x.roll(-1, 1)
    sums = quantized(x, targets)  # perplexity's path: the loss of the int8 logits
    expected = F.cross_entropy(quantized(x).flatten(0, 1), targets.flatten(), reduction="sum")
    torch.testing.assert_close(sums.nll, expected)


@torch.no_grad()
def test_bert_tagger_logits_stay_close_to_float32():
    model = tagger()
    x = ids(3, 20)
    assert min_cosine(quantize_int8(copy.deepcopy(model))(x), model(x)) > 0.99


def test_every_linear_layer_is_int8_but_the_weights_read_as_tensors():
    model = translation_model()
    embeddings = model.src_embed.tokens.weight.detach().clone()
    quantize_int8(model)
    float_linears = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert float_linears == [f"decoder.layers.{i}.cross_attn.qkv_proj" for i in range(2)]
    int8 = {name for name, m in model.named_modules() if isinstance(m, Int8Linear)}
    assert "output" in int8 and "encoder.layers.0.ffn.fc1" in int8  # the tied projection too
    assert torch.equal(model.src_embed.tokens.weight, embeddings)  # embeddings stay float32


@torch.no_grad()
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")  # the reference's own rounding
def test_an_int8_layer_is_the_float_product_of_its_rounded_activations_and_weights():
    """Each row rounded on its own grid (divided by its largest magnitude), int32 sums of int8
    products with no int16 overflow: all-positive activations and weights are the case where
    x86's pairwise int16 sums overflow at 8 bits without VNNI (then 7 bits are used)."""
    torch.manual_seed(0)
    linear = nn.Linear(256, 64)
    linear.weight.uniform_(0.0, 1.0)
    layer = quantize_int8(nn.Sequential(copy.deepcopy(linear)))[0]
    x = torch.rand(5, 256) * torch.tensor([1e-3, 1.0, 10.0, 0.1, 100.0])[:, None]
    rows = x.abs().amax(-1, keepdim=True)
    rounded = torch.quantize_per_tensor_dynamic(x / rows, torch.quint8, not FULL_RANGE).dequantize()
    expected = F.linear(rounded, layer.weight().dequantize()) * rows + linear.bias
    torch.testing.assert_close(layer(x), expected, rtol=1e-5, atol=1e-4)
    # Every row as close to float32 as the others: none pays for the batch's largest.
    error = (layer(x) - linear(x)).abs().amax(-1) / linear(x).abs().amax(-1)
    assert error.max() < 0.01, error


@torch.no_grad()
@pytest.mark.skipif(
    not ONE_ROW_BF16, reason="one row takes the bf16 product only where the CPU has AVX512-BF16"
)
def test_one_row_is_its_bf16_rounding_times_the_int8_weights():
    """A row whose first channel is 1,000x the rest, and a weight that ignores that channel: 8-bit
    activations on the row's own grid would round every other channel to 0 (leaving the bias);
    bf16 keeps them to 3 digits."""
    torch.manual_seed(0)
    linear = nn.Linear(256, 64)
    linear.weight[:, 0] = 0.0
    ranges = {"0": torch.rand(256) + 0.5}
    layer = quantize_int8(nn.Sequential(copy.deepcopy(linear)), ranges)[0]  # smoothed too
    x = torch.randn(1, 1, 256)
    x[..., 0] = 1000.0
    weight = layer._packed_params._weight_bias()[0]
    rounded = (x * layer.input_scale).bfloat16().float()
    expected = rounded @ weight.int_repr().float().T * weight.q_per_channel_scales().float() + linear.bias
    out = layer(x)
    assert out.shape == (1, 1, 64)
    torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-3)
    assert ((out - linear(x)).norm() / (linear(x) - linear.bias).norm()).item() < 0.02


@torch.no_grad()
def test_the_traced_product_rounds_each_row_to_int8_on_its_own_scale_and_sums_exactly():
    """torch.compile's path (zoo.quantize.Int8Linear.traced_product), run eagerly: rows of very
    different sizes each keep their precision, and the integer sums are exact."""
    torch.manual_seed(0)
    linear = nn.Linear(37, 13)  # no multiple of 8 anywhere
    layer = quantize_int8(nn.Sequential(copy.deepcopy(linear)), {"0": torch.rand(37) + 0.5})[0]
    x = torch.randn(2, 3, 37) * torch.tensor([1e-3, 1.0, 100.0])[:, None]
    rows = (x * layer.input_scale).reshape(-1, 37).double()
    scale = rows.abs().amax(-1, keepdim=True) / 127
    weight = layer._packed_params._weight_bias()[0]
    sums = (rows / scale).round() @ weight.int_repr().double().T
    expected = sums * scale * weight.q_per_channel_scales().double() + linear.bias.double()
    out = layer.traced_product(x)
    assert out.shape == (2, 3, 13)
    torch.testing.assert_close(out.double(), expected.reshape(2, 3, 13), rtol=1e-5, atol=1e-6)
    error = (out - linear(x)).abs().amax(-1) / linear(x).abs().amax(-1)
    assert error.max() < 0.03, error


@torch.no_grad()
def test_input_ranges_are_each_channels_largest_magnitude_over_every_calibration_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    batches = [torch.randn(3, 5, 8), torch.randn(2, 8) * 10]
    ranges = input_ranges(model, lambda: [model(x) for x in batches])
    rows = torch.cat([x.reshape(-1, 8) for x in batches])
    torch.testing.assert_close(ranges["0"], rows.abs().amax(0))
    torch.testing.assert_close(ranges["2"], model[1](model[0](rows)).abs().amax(0))
    assert not model[0]._forward_pre_hooks and not model[2]._forward_pre_hooks  # removed after


@torch.no_grad()
def test_smoothing_is_the_same_product_in_float_and_brings_outlier_channels_closer_in_int8():
    """Activations with a few channels 100x the rest, as a Transformer's: one scale per row spends
    the 8-bit grid on them; smoothing moves them into the weight's columns."""
    torch.manual_seed(0)
    linear = nn.Linear(256, 64)
    x = torch.randn(32, 256)
    x[:, [3, 70, 200]] *= 100.0
    reference = linear(x)
    smoothed, before = nn.Linear(256, 64), linear.weight.detach().clone()
    smoothed.weight, smoothed.bias = linear.weight, linear.bias  # tied, as an output projection can be
    smooth(smoothed, x.abs().amax(0))
    torch.testing.assert_close(smoothed(x * smoothed.int8_input_scale), reference, rtol=1e-4, atol=1e-4)
    assert torch.equal(linear.weight, before)  # the tied weight is not written

    def error(ranges):
        layer = quantize_int8(nn.Sequential(copy.deepcopy(linear)), ranges)[0]
        return ((layer(x) - reference).norm() / reference.norm()).item()

    plain, smoothed_error = error(None), error({"0": x.abs().amax(0)})
    assert smoothed_error < plain / 3, (plain, smoothed_error)


@torch.no_grad()
def test_a_calibrated_tagger_is_smoothed_in_every_int8_layer_and_stays_close_to_float32():
    model = tagger()
    ranges = input_ranges(model, lambda: model(ids(4, 20, seed=3)))
    quantized = quantize_int8(copy.deepcopy(model), ranges)
    layers = [m for m in quantized.modules() if isinstance(m, Int8Linear)]
    assert len(ranges) == len(layers) and all(m.input_scale is not None for m in layers)
    x = ids(3, 20)
    assert min_cosine(quantized(x), model(x)) > 0.99


def test_a_model_off_the_cpu_is_refused():
    with pytest.raises(UserError, match="CPU only"):
        quantize_int8(gpt_model().to("meta"))


# How far below the best logit a cached int8 step's choice may score under the uncached int8
# forward, as a fraction of the logits' largest magnitude: activations are quantized with one
# scale per tensor, so a step alone and the whole prefix round differently (~1% measured here).
TOLERANCE = 0.03


def shortfall(logits: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """How far below the best logit of each position the chosen id's logit is."""
    return logits.max(-1).values - logits.gather(-1, chosen[..., None]).squeeze(-1)


@torch.no_grad()
def test_quantized_translation_decodes_greedily_with_the_cache():
    """Every id of a cached greedy search is the best (within int8's error) under the uncached
    forward of the same int8 model over the same prefix."""
    model = quantize_int8(translation_model())
    src = ids(4, 8)
    hyps = greedy_search(model, src, special=SPECIAL_IDS, max_len_b=10).tokens[:, 0]
    tgt_in = torch.cat([torch.full_like(hyps[:, :1], SPECIAL_IDS.bos), hyps[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    bound = TOLERANCE * logits.abs().max()
    logits[..., [SPECIAL_IDS.pad, SPECIAL_IDS.bos]] = float("-inf")  # never generated
    chosen = (hyps != SPECIAL_IDS.pad) & (hyps != SPECIAL_IDS.eos)  # the length limit forces EOS
    assert chosen.sum() >= 20
    assert shortfall(logits, hyps)[chosen].max() <= bound


@pytest.mark.parametrize(
    ("rows", "cache"),
    [(3, {}), (1, {}), (3, {"cache_implementation": "static", "compile": True})],
    ids=["batch", "one row", "compiled static step"],  # fbgemm, bf16 (with AVX512-BF16), torch._int_mm
)
def test_quantized_gpt_generates_greedily_with_the_cache(rows, cache):
    model = quantize_int8(gpt_model())
    prompts = ids(rows, 5).tolist()
    eot = VOCAB - 1
    config = GenerationConfig(max_new_tokens=12, min_new_tokens=12, eos_id=eot, **cache)
    new = torch.tensor(generate(model, prompts, config))
    with torch.no_grad():
        logits = model(torch.cat([torch.tensor(prompts), new], dim=1))[:, 4:-1]  # the 12 predictions
    bound = TOLERANCE * logits.abs().max()
    logits[..., eot] = float("-inf")  # forbidden until min_new_tokens
    assert shortfall(logits, new).max() <= bound


def test_an_int8_gpt_decoding_one_row_leaves_its_embeddings_row_major(monkeypatch, request):
    """Its products are all int8, so zoo.blocks.linear.single_row_weights has nothing to move: the
    float32 embeddings, only looked up, are not copied column-major (as a float32 GPT's tied ones
    are: tests/zoo/decode/test_lm_generate.py)."""
    monkeypatch.setenv("ZOO_CPU_LINEAR", "onednn")
    backend.cache_clear()
    request.addfinalizer(backend.cache_clear)  # the backend the environment chooses, after
    model = quantize_int8(gpt_model())
    weight, address = model.tokens.weight, model.tokens.weight.data_ptr()
    strides: list[tuple[int, ...]] = []
    config = GenerationConfig(max_new_tokens=6, min_new_tokens=6, eos_id=VOCAB - 1)
    generate(model, ids(1, 5).tolist(), config, on_token=lambda _: strides.append(weight.stride()))
    assert strides == [(weight.shape[1], 1)] * 6 and weight.data_ptr() == address
