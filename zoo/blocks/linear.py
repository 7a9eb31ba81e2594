"""`nn.Linear` whose float32 CPU products run on oneDNN where torch's BLAS is slow.

torch's x86 wheels multiply float32 matrices with MKL, and MKL takes its fast AVX-512 kernels on
Intel CPUs only: elsewhere it falls back to generic code. On this project's AMD EPYC (Zen 5) a
(128, 256) x (256, 1024) product ran at ~100 GFLOPS on one core through MKL and ~230 through
oneDNN, the library torch also ships (inductor calls it for frozen CPU linears; CTranslate2's CPU
backend uses MKL on GenuineIntel CPUs only, `CT2_USE_MKL` overriding, for the same reason):
bench/results/cpu_linear.md. So the zoo's linears route their
three products (forward, input gradient, weight gradient) through oneDNN when:

- the backend is "onednn": `ZOO_CPU_LINEAR=onednn|torch` chooses; unset, oneDNN is chosen where
  torch's BLAS is MKL and the CPU is not an Intel one (MKL's fast paths are Intel's);
- the tensors are plain float32 CPU tensors, the weight row-major, the product at least MIN_MACS
  multiply-adds;
- outside autocast (bf16 products are oneDNN's already), torch.compile, torch.export, tracing and
  dispatch modes such as FlopCounterMode (they see `F.linear`).

Everything else takes `F.linear`. The results equal `F.linear`'s to float32 rounding (the sums run
in another order), and the state dict is nn.Linear's.

One row against a weight is a matrix-vector product, and there MKL's generic code is slow:
`single_row_weights` readies a model for decoding one sequence (its weights stored column-major,
or its products split into one batched call, by the model's size).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

# oneDNN costs ~18 us a call more than MKL before its faster kernel pays: a product of fewer
# multiply-adds stays on F.linear (1 x 256 x 1024: 26 us against MKL's 17; 4 x 256 x 1024: 27
# against 46; one row against GPT's 8,192 x 192 output projection: 215 against 394).
MIN_MACS = 1 << 20
BACKENDS = ("onednn", "torch")
# The last-level cache assumed where the CPU's cannot be read (this project's machine: 32 MB of L3).
DEFAULT_CACHE_BYTES = 32 << 20
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# How many `single_row_weights` contexts that split one-row products are open.
_split_contexts = 0


def _cpu_vendor() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("vendor_id")), "")


@functools.cache
def cache_bytes(caches: Path = CPU_CACHES) -> int:
    """The CPU's last-level cache in bytes, from Linux's sysfs (`caches`: cpu0's cache folder):
    a model's weights up to this size stay cached from one decoding step to the next, larger ones
    stream from memory every step. DEFAULT_CACHE_BYTES where it cannot be read."""
    sizes = {}
    for index in caches.glob("index*"):
        try:
            level, size = (index / "level").read_text().strip(), (index / "size").read_text().strip()
            sizes[int(level)] = int(size[:-1]) * _UNITS[size[-1]] if size[-1] in _UNITS else int(size)
        except (OSError, ValueError):
            continue
    return sizes[max(sizes)] if sizes else DEFAULT_CACHE_BYTES


@functools.cache
def backend() -> str:
    """The backend of float32 CPU linears: ZOO_CPU_LINEAR's, else chosen from the BLAS and CPU."""
    chosen = os.environ.get("ZOO_CPU_LINEAR", "")
    if chosen:
        if chosen not in BACKENDS:
            raise ValueError(f"ZOO_CPU_LINEAR={chosen!r}: choose from {', '.join(BACKENDS)}")
        return chosen
    usable = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    mkl_blas = "BLAS_INFO=mkl" in torch.__config__.show()
    return "onednn" if usable and mkl_blas and _cpu_vendor() not in ("", "GenuineIntel") else "torch"


def _product(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias for 2-D x by oneDNN (strided views accepted: no copies)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _product(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        grad = grad.contiguous()  # a gradient broadcast from a sum has zero strides
        need_x, need_weight, need_bias = ctx.needs_input_grad
        return (
            _product(grad, weight.t()) if need_x else None,
            _weight_grad(grad, x) if need_weight else None,
            grad.sum(0) if ctx.has_bias and need_bias else None,
        )


def _weight_grad(grad: Tensor, x: Tensor) -> Tensor:
    """grad.T @ x, (out, in), for grad (N, out) and x (N, in). oneDNN copies a transposed input
    into rows first (a slow strided copy: ~3 GB/s on one Zen 4 core), so the narrower of the
    two goes in as the input: for a widening layer (out > in) the product is (x.T @ grad).T.
    ViT's fc1 (192 -> 768, 4,160 rows) took 12.2 ms instead of 14.9, its qkv 9.1 instead of 12.2."""
    if grad.shape[1] > x.shape[1]:
        return _product(x.t(), grad.t()).t()
    return _product(grad.t(), x.t())


def _plain(t: Tensor) -> bool:
    return type(t) in (Tensor, nn.Parameter) and t.device.type == "cpu" and t.dtype == torch.float32


def onednn_applies(*tensors: Tensor | None) -> bool:
    """Whether products of these tensors (None: an absent bias) go to oneDNN: the conditions of
    the module docstring, the product's size aside."""
    return (
        all(t is None or _plain(t) for t in tensors)
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
        and not torch.jit.is_tracing()
        and _get_current_dispatch_mode() is None  # FlopCounterMode, FakeTensorMode: they count F.linear
        and backend() == "onednn"
    )


def matmul_nt(a: Tensor, b: Tensor) -> Tensor:
    """a @ b.T for 2-D a and b, on oneDNN where `onednn_applies`."""
    return _product(a, b) if onednn_applies(a, b) else a @ b.T


def split_parts(rows: int) -> int:
    """How many equal parts `split_product` cuts a weight of `rows` output rows into: the smallest
    divisor from 2 (GPT-2's 50,257-piece vocabulary: 29 parts), 0 when none up to 64 divides it."""
    return next((k for k in range(2, 65) if rows % k == 0), 0)


def _split_parts_here(x: Tensor, weight: Tensor, bias: Tensor | None) -> int:
    """The parts a product inside an open splitting context is split into, 0 when it is not: one
    row of plain float32 CPU tensors, a row-major weight whose rows divide, no autocast, not under
    torch.compile (its CPU steps multiply with kernels of their own: zoo.decode.lm_static), tracing
    or dispatch modes."""
    applies = (
        x.numel() == x.shape[-1]
        and all(t is None or (t.dtype == torch.float32 and t.device.type == "cpu") for t in (x, weight, bias))
        and weight.is_contiguous()
        and not torch.is_autocast_enabled("cpu")
        and not (torch.compiler.is_compiling() or _get_current_dispatch_mode() or torch.jit.is_tracing())
    )
    return split_parts(weight.shape[0]) if applies else 0


def split_product(x: Tensor, weight: Tensor, bias: Tensor | None = None, parts: int = 0) -> Tensor:
    """F.linear for one row as `parts` equal parts of the weight's rows (0: `split_parts`'s) in
    one batched call: MKL's batched product streams a weight from memory faster than its
    matrix-vector product, and shares the parts among threads. The row goes in as an (in, 1)
    column: as a (1, in, 1) view MKL takes a slow path."""
    parts = weight.view(parts or split_parts(weight.shape[0]), -1, weight.shape[1])
    column = x.reshape(1, -1).t().expand(parts.shape[0], -1, -1)
    out = torch.bmm(parts, column).view(*x.shape[:-1], weight.shape[0])
    return out if bias is None else out + bias


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`F.linear(x, weight, bias)`, on oneDNN where the module docstring says."""
    parts = _split_parts_here(x, weight, bias) if _split_contexts else 0
    if parts:
        return split_product(x, weight, bias, parts)
    small = x.numel() * weight.shape[0] < MIN_MACS
    if x.dim() < 2 or small or weight.stride(-1) != 1 or not onednn_applies(x, weight, bias):
        return F.linear(x, weight, bias)
    rows = x.reshape(-1, x.shape[-1])
    return _OneDNNLinear.apply(rows, weight, bias).view(*x.shape[:-1], weight.shape[0])


@contextlib.contextmanager
def single_row_weights(module: nn.Module) -> Iterator[None]:
    """Inside, the module's one-row products run faster (the same values, shapes and Parameter
    objects, and results equal to float32 rounding); leaving puts everything back.

    For decoding one sequence, where every product has one row, on the backend "onednn" (torch's
    MKL on a non-Intel CPU), whose matrix-vector product is slow on nn.Linear's row-major
    (out, in) weights. A step's products, each weight once, Zen 5 (bench/results/gpt_split.md):
    - weights that stay in the cache between steps (up to `cache_bytes()` in all) are stored
      column-major, which MKL reads faster (GPT micro, 5 MB: 1.17x the row-major step; split,
      0.69x);
    - larger ones, streamed from memory every step, keep their layout, and every one-row
      product while the context is open is split into one batched call (`split_product`): GPT
      mini (36 MB) 1.63x the row-major step at one thread and 2.10x at two, GPT-2 small
      (500 MB) 1.36x / 1.27x; column-major there 0.75x-1.37x.
    From two or more rows on, row-major wins at some sizes: one row only. Only the weights that
    products read count and move (`_product_weights`). Eager decoding only: a compiled CPU step
    packs the weights for kernels of its own (zoo.decode.lm_static).
    """
    weights = []
    if backend() == "onednn":
        weights = [p for p in _product_weights(module) if p.dim() == 2 and _plain(p) and p.is_contiguous()]
    if sum(p.nbytes for p in weights) > cache_bytes():
        context = _split()
    else:
        context = _column_major(weights)
    with context:
        yield


def _product_weights(module: nn.Module) -> list[Tensor]:
    """The weights the module's products read: its nn.Linear layers' and, where it or a submodule
    names one, the output projection multiplied by (`output_product_weight`: GPT's tied
    embeddings, None once zoo.quantize gave them an int8 copy). Weights only looked up
    (embeddings, positions) keep their layout: a lookup reads one row, which column-major storage
    would scatter, and moving a large embedding costs a copy of it (16 MB for GPT mini's, ~4-8
    ms) per generation."""
    weights = [m.weight for m in module.modules() if isinstance(m, nn.Linear)]
    outputs = [getattr(m, "output_product_weight", None) for m in module.modules()]
    return list(dict.fromkeys(weights + [w for w in outputs if w is not None]))


@contextlib.contextmanager
def _column_major(weights: list[nn.Parameter]) -> Iterator[None]:
    row_major = [p.data for p in weights]  # put back as they were: no second copy on the way out
    for p in weights:
        p.data = p.data.t().contiguous().t()
    try:
        yield
    finally:
        for p, data in zip(weights, row_major):
            p.data = data


@contextlib.contextmanager
def _split() -> Iterator[None]:
    global _split_contexts
    _split_contexts += 1
    try:
        yield
    finally:
        _split_contexts -= 1


class Linear(nn.Linear):
    """nn.Linear (same parameters, state dict and init) through `linear`."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)
