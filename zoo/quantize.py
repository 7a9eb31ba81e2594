"""int8 inference on the CPU: a trained model's linear layers with int8 weights (`--precision int8`).

The method is torch's own dynamic quantization (`torch.ao.quantization.quantize_dynamic`):
weights int8 with one scale per output channel (as CTranslate2's per-row scales), activations
quantized to uint8 at run time (8 bits where the CPU has VNNI, else torch's 7: `FULL_RANGE`),
each row on its own scale (`Int8Linear`), products in fbgemm's int8 kernels with int32 sums,
outputs in float32. Two other paths multiply the same int8 weights:
- One row alone in eager mode (decoding one sequence), where the CPU multiplies bf16 in hardware:
  the row, rounded to bf16 rather than quantized, meets the weights in torch's
  `_weight_int8pack_mm` (the int8 weight-only scheme of gpt-fast and torchao). A one-row product
  reads each weight once, so its time is reading the weights, which int8 makes a quarter of
  float32's, and quantizing the row in eager operations costs more than the product.
- Under `torch.compile` (the static cache's compiled step), whose tracer cannot enter fbgemm's
  packed weights: each row rounded to int8 on its own symmetric scale (CTranslate2's scheme) and
  `torch._int_mm`, int32 sums; inductor compiles the rounding into its own C++ kernels.
Measured on GPT mini decoding one sequence, one thread (bench/results/int8.md, "One row"): eager
1.2x faster with the bf16 path than with fbgemm's; compiled, 1.3-1.8x faster with `_int_mm` than
with the bf16 path, and 3x eager fbgemm's.

Chosen over torchao 0.18.0's `Int8DynamicActivationInt8WeightConfig` by one measurement
(bench/results/int8.md, `python -m bench.int8_speed methods --compile`): a BERT encoder of
all-MiniLM-L6-v2's size at batch 32 x 128, one thread, ran 3.5x float32 with quantize_dynamic and
1.2x with torchao in eager mode; torchao matched quantize_dynamic (3.4x) only under
`torch.compile` with inductor's freezing, after 14 s of compiling for that one input shape, which
the verbs' eager loops (a new shape every decoding step, beams, caches, batches of every length)
cannot pay. All kept the hidden states at cosine similarity >= 0.9998 to float32's. torch marks
`torch.ao.quantization` deprecated (its warning points to torchao's `quantize_`), yet 2.14 ships
and runs it; its warnings are silenced around the one call that raises them. torch's layer gives
the activations one scale per tensor, so a row's outputs would move with the rest of its batch;
`Int8Linear` scales each row alone, as CTranslate2 does.

What becomes int8 and what stays float32:
- int8: every `nn.Linear` the model calls as a module: attention's fused q/k/v and output
  projections, the feed-forward layers, poolers and task heads, and the encoder-decoder's output
  projection even where it is tied to the embeddings (the module gets an int8 copy); and GPT's
  tied output projection, as an int8 copy in its `int8_output` slot (`GPT.logits` reads it).
  CTranslate2's `compute_type="int8"` quantizes its tied projection too.
- float32: embeddings (a lookup, no product to speed up), norms, biases (added in float32), and
  two weights the models read as tensors rather than call as modules: cross-attention's fused
  projection (its query rows sliced every step, its key and value rows once per sentence:
  zoo.blocks.attention) and BERT's masked-LM head (a product over the token embeddings, not a
  module).
  CTranslate2 stores all of these in int8, embeddings included; here they stay float32 so that
  neither the models' code nor their checkpoints change.

Smoothing (SmoothQuant, Xiao et al. 2023), optional: a few input channels of a Transformer's
linear layers carry values far larger than the rest, and one scale per row spends the 8-bit grid
on them. Given each layer's largest input magnitude per channel on calibration data
(`input_ranges`), `quantize_int8(model, ranges)` divides input channel j by
s_j = range_j^alpha / max_i |W_ij|^(1 - alpha) and multiplies the weight's column j by it: the
same product in exact arithmetic, with the activations' outliers moved into the weights, which
have one scale per output channel to absorb them. GPT's tied output projection (read as a
tensor, not called as a module) is not smoothed.

The quantized model is for inference only: no gradients, and the encoder-decoder's teacher-forced
loss (which reads `output.weight`) is not available.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.ao.nn.quantized import dynamic
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from zoo.blocks import MultiHeadAttention
from zoo.blocks.linear import Linear
from zoo.config import UserError

# torch.ao.quantization's warnings on every call: a DeprecationWarning for the package and a
# UserWarning for the quantized tensors it makes (see the module docstring).
DEPRECATION_MESSAGES = (r"torch\.ao\.quantization is deprecated", r"torch\.quantize_per_tensor")
# torch's layer quantizes activations to 7 bits (`reduce_range`): x86's int8 product instruction
# sums pairs of products into int16, which 8-bit activations can overflow. fbgemm's kernels for
# avx512_vnni accumulate in int32 instead, so there the full 8 bits are safe; on the demo
# translation model they are worth 0.21 BLEU (bench/results/int8.md).
FULL_RANGE = torch.cpu._is_vnni_supported()
# Whether one row takes the bf16 x int8 product in eager mode (module docstring): bf16 arithmetic
# in hardware.
ONE_ROW_BF16 = torch.cpu._is_avx512_bf16_supported()
FLOAT_LINEARS = (nn.Linear, Linear)  # Linear: zoo.blocks.linear's, the zoo's own layers
# SmoothQuant's migration strength: 0.5 splits each channel's range evenly between activations
# and weights (the paper's default for BERT- and OPT-sized models).
SMOOTHING_ALPHA = 0.5
# The smallest range a channel is given: a channel calibration never saw active would otherwise
# be divided by zero.
SMOOTHING_FLOOR = 1e-5


class Int8Linear(dynamic.Linear):
    """torch's dynamically quantized linear layer, with 8-bit activations where FULL_RANGE and
    one activation scale per row (per token).

    fbgemm's layer quantizes the activations with one scale per tensor, so a row of small values
    shares the grid of the batch's largest and loses its precision to it (CTranslate2 scales each
    row alone). Here each row is divided by its largest magnitude before the layer quantizes it and
    its outputs multiplied back after, which gives every row its own grid for two elementwise
    passes; the bias, kept out of the packed weights, is added last in float32.
    """

    input_scale: Tensor | None = None  # 1 / s per input channel where smoothed (module docstring)
    # The int8 weights as a plain tensor (out, in) for the two paths fbgemm does not take (module
    # docstring), and each output channel's scale, applied in float32 after the product.
    int8_weight: Tensor
    channel_scales: Tensor
    unit_scales: Tensor  # ones, bf16: _weight_int8pack_mm takes its scales in its input's dtype

    def forward(self, x: Tensor) -> Tensor:
        if torch.compiler.is_compiling():
            return self.traced_product(x)
        if ONE_ROW_BF16 and x.numel() == x.shape[-1]:
            return self.bf16_product(x)
        # Each pass over the activations costs about a tenth of the int8 product here, so the row
        # maxima come from the largest and smallest values (two reductions, no |x| tensor made:
        # 1.7x faster than abs then amax on this CPU; torch's infinity norm and aminmax are ~15x
        # slower), and a smoothed input is scaled into a tensor of its own that the division reuses.
        if self.input_scale is not None:
            x = x * self.input_scale
        rows = torch.maximum(x.amax(-1, keepdim=True), x.amin(-1, keepdim=True).neg_())
        rows = rows.clamp_(min=torch.finfo(x.dtype).tiny)
        x = x.div_(rows) if self.input_scale is not None else x / rows
        packed = self._packed_params._packed_params
        out = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=not FULL_RANGE).mul_(rows)
        return (out if self.float_bias is None else out.add_(self.float_bias)).to(x.dtype)

    def bf16_product(self, x: Tensor) -> Tensor:
        """x (..., in) -> (..., out): x rounded to bf16 times the int8 weights, summed in float32
        (one row's path in eager mode: module docstring)."""
        out = torch.ops.aten._weight_int8pack_mm(
            self.rows(x).to(torch.bfloat16), self.int8_weight, self.unit_scales
        )
        return self.finish(out.float().mul_(self.channel_scales), x)

    def traced_product(self, x: Tensor) -> Tensor:
        """x (..., in) -> (..., out) in operations torch.compile traces: each row rounded to int8 on
        its own symmetric scale (CTranslate2's scheme), times the int8 weights in `torch._int_mm`
        (exact int32 sums)."""
        rows = self.rows(x)
        scale = rows.abs().amax(-1, keepdim=True).clamp(min=torch.finfo(rows.dtype).tiny) / 127
        sums = torch._int_mm((rows / scale).round().to(torch.int8), self.int8_weight.t())
        return self.finish(sums.float() * (scale * self.channel_scales), x)

    def rows(self, x: Tensor) -> Tensor:
        """x (..., in) as (rows, in), smoothed where the layer is."""
        rows = x.reshape(-1, x.shape[-1])
        return rows if self.input_scale is None else rows * self.input_scale

    def finish(self, out: Tensor, x: Tensor) -> Tensor:
        """The (rows, out) float32 product of x with its bias added, in x's leading shape and dtype."""
        out = out if self.float_bias is None else out + self.float_bias
        return out.reshape(*x.shape[:-1], -1).to(x.dtype)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Int8Linear:
        input_scale = getattr(mod, "int8_input_scale", None)
        if type(mod) is Linear:
            mod = plain_linear(mod)
        layer = super().from_float(mod, use_precomputed_fake_quant)
        layer.input_scale = input_scale
        weight, bias = layer._packed_params._weight_bias()
        layer.float_bias = bias
        layer._packed_params.set_weight_bias(weight, None)
        layer.int8_weight = weight.int_repr()
        layer.channel_scales = weight.q_per_channel_scales().float()
        layer.unit_scales = torch.ones(weight.shape[0], dtype=torch.bfloat16)
        return layer


def plain_linear(layer: Linear) -> nn.Linear:
    """An nn.Linear holding `layer`'s parameters (and qconfig): torch's quantization converts
    modules by exact type, and the zoo's Linear is a subclass with another forward."""
    plain = nn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta")
    plain.weight, plain.bias = layer.weight, layer.bias
    if hasattr(layer, "qconfig"):
        plain.qconfig = layer.qconfig
    return plain


def fp32_linears(model: nn.Module) -> set[nn.Linear]:
    """The linear layers whose weight the model reads as a tensor (the fused projections of every
    `cross_attn`: the Transformer's decoder layers and the recurrent decoder): they stay float32,
    since a quantized layer has no weight tensor to slice."""
    return {
        module.cross_attn.qkv_proj
        for module in model.modules()
        if isinstance(getattr(module, "cross_attn", None), MultiHeadAttention)
    }


def quantizable(model: nn.Module) -> dict[str, nn.Module]:
    """Name -> each linear layer that `quantize_int8` makes int8."""
    kept = fp32_linears(model)
    return {
        name: module
        for name, module in model.named_modules()
        if type(module) in FLOAT_LINEARS and module not in kept
    }


@torch.no_grad()
def input_ranges(model: nn.Module, run: Callable[[], object]) -> dict[str, Tensor]:
    """Name -> the largest magnitude of each input channel that reaches each quantizable linear
    layer while `run()` runs the float model on calibration data (smoothing's statistic)."""
    ranges: dict[str, Tensor] = {}

    def recorder(name: str) -> Callable[[nn.Module, tuple[Tensor, ...]], None]:
        def record(module: nn.Module, inputs: tuple[Tensor, ...]) -> None:
            seen = inputs[0].detach().abs().flatten(0, -2).amax(0).float()
            ranges[name] = torch.maximum(ranges[name], seen) if name in ranges else seen

        return record

    hooks = [module.register_forward_pre_hook(recorder(name)) for name, module in quantizable(model).items()]
    try:
        run()
    finally:
        for hook in hooks:
            hook.remove()
    return ranges


def smooth(layer: nn.Module, input_range: Tensor, alpha: float = SMOOTHING_ALPHA) -> None:
    """Move `layer`'s input outliers into its weight (module docstring): a new weight W diag(s),
    never written into the old one (it may be tied to the embeddings), and 1 / s kept for the
    int8 layer to scale its inputs by."""
    weight = layer.weight.detach()
    columns = weight.abs().amax(0).clamp(min=SMOOTHING_FLOOR)
    scale = input_range.clamp(min=SMOOTHING_FLOOR).pow(alpha) / columns.pow(1 - alpha)
    layer.weight = nn.Parameter(weight * scale, requires_grad=False)
    layer.int8_input_scale = scale.reciprocal()


def quantize_int8(model: nn.Module, ranges: dict[str, Tensor] | None = None) -> nn.Module:
    """`model` with its linear layers swapped in place for int8 ones (see the module docstring for
    which), in eval mode; returned for chaining. With `ranges` (`input_ranges` of this model),
    the layers they name are smoothed first.

    Raises:
        UserError: the model is not on the CPU (fbgemm's int8 kernels are CPU kernels).
    """
    devices = {param.device.type for param in model.parameters()}
    if devices != {"cpu"}:
        raise UserError(
            f"int8 runs on the CPU only (the model is on {', '.join(sorted(devices))}): use --device cpu"
        )
    layers = quantizable(model)
    for name, input_range in (ranges or {}).items():
        smooth(layers[name], input_range)
    names = dict.fromkeys(layers, per_channel_dynamic_qconfig)
    with warnings.catch_warnings():
        for message in DEPRECATION_MESSAGES:
            warnings.filterwarnings("ignore", message=message)
        quantize_dynamic(
            model, names, dtype=torch.qint8, mapping=dict.fromkeys(FLOAT_LINEARS, Int8Linear), inplace=True
        )
        if hasattr(model, "int8_output"):  # GPT: an int8 copy of its tied output projection
            vocab, dim = model.output_weight.shape
            tied = nn.Linear(dim, vocab, bias=False, device="meta")
            tied.weight, tied.qconfig = model.output_weight, per_channel_dynamic_qconfig
            model.int8_output = Int8Linear.from_float(tied)
    return model.eval()


def describe(model: nn.Module) -> str:
    """How many of `model`'s linear layers are int8 and how many float32, in a few words."""
    int8 = [module for module in model.modules() if isinstance(module, Int8Linear)]
    smoothed = sum(module.input_scale is not None for module in int8)
    kept = sum(type(module) in FLOAT_LINEARS for module in model.modules())
    return f"{len(int8)} linear layers in int8 ({smoothed} smoothed), {kept} in float32"
