"""Scaled dot-product attention (the paper's eq. 1) and multi-head attention (eq. 2-3).

Shape key: B batch, T query length, S key length, H heads, Dh head dim (of values, D / H), Dk
head dim of queries and keys (Dh unless `key_dim` says otherwise), D model dim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor, nn

from zoo.blocks.attention_scores import SCORES, AdditiveScore, dot_scores
from zoo.blocks.beam_cache import BeamKVCache
from zoo.blocks.dropout import cheap_mask_applies
from zoo.blocks.dropout import dropout as cheap_dropout
from zoo.blocks.kv_cache import KVCache
from zoo.blocks.linear import Linear, linear
from zoo.blocks.softmax import softmax_last

FEW_QUERIES = 8
"""Query blocks up to this length (incremental decoding: one query per row, or one per beam of a
sequence) take the written-out path in eval mode."""

LOW_PRECISION = (torch.bfloat16, torch.float16)
LOW_PRECISION_CPU_MAX_KEYS = 256
"""On a CPU in bf16 or fp16 (autocast), attention over at most this many keys takes the
written-out path: torch's CPU flash kernel took 5-7x as long as the three products, forward and
backward, over 65-128 keys, and 1.1-2.4x as long at 256 (two runs); it wins on long causal
sequences (1,024 keys: half their time).
bench/results/attention_bf16_cpu.md."""
FLOAT32_CPU_MAX_KEYS = 16
"""The same in float32, over fewer keys: forward and backward over the 14-15 keys of a Multi30k
batch (253 sentences, 4 heads) took the kernel 17-18 ms and the written-out path 10-12, its
softmax padded (zoo.blocks.softmax: torch's own takes a slow path under 16 keys). Inside the
model the written-out products copy q, k and v, which the kernel reads in place: the Multi30k
model's step ran 1.01-1.06x faster written out at 10-14 keys, 0.99-1.02x at 30 (one and two
threads; bench/results/attention_short_keys_cpu.md)."""
FLOAT32_CPU_MIN_SCORES = 8192
"""...and over at least this many scores (batch x heads x queries x keys): below it the one
kernel call beats the written-out path's several (2 x 4 x 14 x 14 scores: 0.13-0.16 against
0.23-0.27 ms; level at 8 x 4 x 14 x 14; at 32 x 4 x 14 x 14 the written-out path took 0.57-1.21
against 1.02-1.57 ms, head widths 8-64, one thread)."""


def attention_reference(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    *,
    score_fn: Callable[[Tensor, Tensor], Tensor] = dot_scores,
    dropout: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T / sqrt(Dk)) v written out, returning the weights (before dropout) too.

    The fused kernel computes the same thing without materialising the weights; this form serves
    as the test reference, for attention maps, and for scores the kernel does not know.

    Args:
        score_fn: (q, k) -> the scores (.., T, S) before masking (zoo.blocks.attention_scores).
        dropout: dropout on the weights (pass 0 outside training).
    """
    scores = score_fn(q, k)
    if is_causal:
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax_last(scores)  # of bf16 scores: float32's softmax rounded, as torch computes it
    return (cheap_dropout(weights, dropout) if dropout else weights) @ v, weights


class MultiHeadAttention(nn.Module):
    """One module for every attention in the zoo.

    - self-attention: `attn(x, mask=...)`
    - causal self-attention: `attn(x, is_causal=True)` (SDPA's fast path) or an explicit mask
    - cross-attention: `attn(x, context)`; keys and values come from `context`
    - restricted attention: a `local_mask` as `mask`
    - incremental decoding: pass a `KVCache`; self-attention appends to it, cross-attention fills
      it on the first call and reuses it afterwards (then `context` may be None); beam search's
      self-attention passes a `BeamKVCache`, whose mask picks each row's history

    `forward` reads in three steps, one path at a time: the projections (`_self_qkv` or
    `_cross_qkv`), the core (`_attend`: written out while recording maps, for a few decoding
    queries or for a score the fused kernel lacks, SDPA otherwise), and the merged heads' output
    projection.

    The q/k/v projections live in one (2 H Dk + D, D) weight, q, k and v rows in that order: with
    Dk = Dh, the (3D, D) layout of `nn.MultiheadAttention`'s `in_proj_weight`. Self-attention runs
    one fused matmul, cross-attention splits it in two.

    Args:
        dim: model width D.
        num_heads: H; must divide `dim`.
        dropout: dropout on the attention weights (training only).
        bias: whether the projections have biases.
        score: a key of zoo.blocks.attention_scores.SCORES: "scaled_dot" (the paper), "dot"
            (without 1/sqrt(Dk)) or "additive" (Bahdanau's, written out: no fused kernel).
        key_dim: Dk, the per-head width of queries and keys (the paper's d_k, Table 3 row B);
            None = D / H. Values keep Dh = D / H.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        score: str = "scaled_dot",
        key_dim: int | None = None,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}; choose from {sorted(SCORES)}")
        if key_dim is not None and key_dim < 1:
            raise ValueError(f"key_dim must be at least 1 or None, got {key_dim}")
        self.dim, self.num_heads, self.head_dim = dim, num_heads, dim // num_heads
        self.key_dim = key_dim or self.head_dim
        self.qkv_sizes = (num_heads * self.key_dim, num_heads * self.key_dim, dim)
        self.dropout = dropout
        self.score = score
        self.additive = AdditiveScore(num_heads, self.key_dim) if score == "additive" else None
        self.qkv_proj = Linear(dim, sum(self.qkv_sizes), bias=bias)
        self.out_proj = Linear(dim, dim, bias=bias)

    def _split_heads(self, x: Tensor) -> Tensor:
        # "b t (h d) -> b h t d" as a view and a transpose: on every decoding step, where einops'
        # per-call cost (~5-10 us) showed (bench/results/refactor_cache_einops.md)
        b, t, width = x.shape
        return x.view(b, t, self.num_heads, width // self.num_heads).transpose(1, 2)

    def _merge_heads(self, out: Tensor, rows: int | None = None) -> Tensor:
        """(n, H, g T, Dh) outputs of `rows` = g n query rows grouped as in `_group_rows` (g = 1
        without `rows`) -> projected (rows, T, D)."""
        n, heads, gt, head_dim = out.shape
        rows = rows or n
        t = gt // (rows // n)
        # "n h (g t) d -> (n g) t (h d)" in one copy (plain calls, as in `_split_heads`)
        out = out.view(n, heads, rows // n, t, head_dim).permute(0, 2, 3, 1, 4)
        return self.out_proj(out.reshape(rows, t, heads * head_dim))

    def _bias(self, part: int) -> Tensor | None:
        """The bias of the queries (part 0) or of the keys and values (part 1)."""
        bias = self.qkv_proj.bias
        if bias is None:
            return None
        queries = self.qkv_sizes[0]
        return bias[:queries] if part == 0 else bias[queries:]

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        *,
        mask: Tensor | None = None,
        is_causal: bool = False,
        cache: KVCache | BeamKVCache | None = None,
    ) -> Tensor:
        """Attend from x (B, T, D) to itself or to `context` (B, S, D); returns (B, T, D).

        Cross-attention may also serve g query rows per context sequence: x (g n, T, D) over
        `context` (or a cross cache) of n sequences, rows g i .. g i + g - 1 attending to sequence
        i. Beam search uses it so that a sentence's beams share one copy of its encoder output
        and keys/values; the g T queries of a sequence then run as one block against its keys.
        Beam search's self-attention cache (BeamKVCache) is read the same way, through its mask.

        Args:
            mask: bool, True = may attend, broadcastable to (B, H, T, S); per context sequence,
                (n, 1, 1, S), when rows share a sequence.
            is_causal: use the kernel's causal mask (only valid for T == S with no cache offset).
            cache: KV cache for incremental decoding (see class docstring).
        """
        if context is None and (cache is None or not cache.cross):
            q, k, v = self._self_qkv(x, cache)
        else:
            q, k, v = self._cross_qkv(x, context, cache)
        if cache is not None and cache.mask is not None:  # beams reading shared histories
            mask = cache.mask if mask is None else mask & cache.mask
        rows = q.shape[0]
        out = self._attend(_group_rows(q, k.shape[0]), k, v, mask, is_causal, rows)
        return self._merge_heads(out, rows)

    def _self_qkv(self, x: Tensor, cache: KVCache | BeamKVCache | None) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention: q, k (B, H, T, Dk) and v (B, H, T, Dh) from one fused projection; with
        a cache, the keys/values of every step so far (zoo.blocks.kv_cache, or
        zoo.blocks.beam_cache)."""
        b, t, _ = x.shape
        qkv = self.qkv_proj(x)
        if self.key_dim == self.head_dim:
            # "b t (three h d) -> three b h t d" as a view and a permute: it runs on every decoding
            # step, where einops' per-call cost showed (a GPT decode step's profile, bench/gpt_speed.py)
            q, k, v = qkv.view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        else:
            q, k, v = (self._split_heads(z) for z in qkv.split(self.qkv_sizes, dim=-1))
        if cache is not None:
            k, v = cache.append(k, v)
        return q, k, v

    def _cross_qkv(
        self, x: Tensor, context: Tensor | None, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Cross-attention: q (B, H, T, Dk) from x, keys (n, H, S, Dk) and values (n, H, S, Dh)
        from `context`, or from the cache once the first step has filled it (zoo.blocks.kv_cache)."""
        queries = self.qkv_sizes[0]
        q = self._split_heads(linear(x, self.qkv_proj.weight[:queries], self._bias(0)))
        if cache is not None and not cache.is_empty:
            return q, cache.keys, cache.values
        if context is None:
            raise ValueError("cross-attention needs `context` until its cache is filled")
        k, v = self.context_kv(context)
        if cache is not None:
            cache.set(k, v)
        return q, k, v

    def context_kv(self, context: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention's keys (n, H, S, Dk) and values (n, H, S, Dh) of `context` (n, S, D):
        what a cross cache holds from the first decoding step on (an exported encoder computes
        them once, zoo.convert.onnx)."""
        kv = linear(context, self.qkv_proj.weight[self.qkv_sizes[0] :], self._bias(1))
        k, v = (self._split_heads(z) for z in kv.split(self.qkv_sizes[1:], dim=-1))
        return k, v

    def _attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool, rows: int
    ) -> Tensor:
        """softmax(scores(q, k)) v on (n, H, T', Dk) queries (`rows` query rows grouped by
        `_group_rows`), by the path that is fastest or that the caller needs."""
        # Compiled code records nothing: dynamo cannot trace ContextVar.get (a graph break per
        # attention call on torch 2.11), and a recording is a debugging aid, not a training path.
        maps = None if torch.compiler.is_compiling() else _RECORDING.get().get(self)
        if maps is not None:  # attention maps: the weights written out, per query row
            out, weights = attention_reference(q, k, v, mask, is_causal, score_fn=self._scores)
            maps.append(rearrange(weights, "n h (g t) s -> (n g) h t s", g=rows // q.shape[0]))
            return out
        dropout = self.dropout if self.training else 0.0
        if (
            self.additive is not None
            or (q.shape[2] <= FEW_QUERIES and not self.training)
            or (dropout and cheap_mask_applies(q, dropout))
            or _few_keys_on_cpu(q, k)
        ):
            # The additive score has no fused kernel. Decoding steps (a few queries per sequence):
            # three plain products beat the kernel (about 8% of a beam search's time on the small
            # bench preset). Dropout on the weights on a CPU: the kernel falls back to these same
            # products with a bernoulli_ mask, which took 14% of a SQuAD fine-tuning step
            # (bench.bert_finetune_speed, bf16); zoo's cheap mask costs a fraction of it. Short
            # sequences on a CPU: see LOW_PRECISION_CPU_MAX_KEYS and FLOAT32_CPU_MAX_KEYS.
            return attention_reference(q, k, v, mask, is_causal, score_fn=self._scores, dropout=dropout)[0]
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, dropout_p=dropout, scale=self._scale
        )

    def _scores(self, q: Tensor, k: Tensor) -> Tensor:
        """The scores (n, H, T', S) of this module's `score`, before masking."""
        if self.additive is not None:
            return self.additive(q, k)
        return dot_scores(q, k, scaled=self.score == "scaled_dot")

    @property
    def _scale(self) -> float | None:
        """The fused kernel's scale for the dot products (None: its default, 1 / sqrt(Dk))."""
        return None if self.score == "scaled_dot" else 1.0


def _few_keys_on_cpu(q: Tensor, k: Tensor) -> bool:
    if q.device.type != "cpu" or torch.compiler.is_compiling():
        return False
    if q.dtype in LOW_PRECISION:
        return k.shape[-2] <= LOW_PRECISION_CPU_MAX_KEYS
    return (
        q.dtype == torch.float32
        and k.shape[-2] <= FLOAT32_CPU_MAX_KEYS
        and q.shape[:-1].numel() * k.shape[-2] >= FLOAT32_CPU_MIN_SCORES
    )


def _group_rows(q: Tensor, sequences: int) -> Tensor:
    """(g n, H, T, Dh) queries of g consecutive rows per sequence -> (n, H, g T, Dh)."""
    rows = q.shape[0]
    if rows == sequences:
        return q
    if rows % sequences:
        raise ValueError(f"{rows} query rows cannot share {sequences} context sequences evenly")
    g = rows // sequences
    # "(n g) h t d -> n h (g t) d" (plain calls, as in `_split_heads`)
    return q.view(sequences, g, *q.shape[1:]).transpose(1, 2).reshape(sequences, q.shape[1], -1, q.shape[3])


# The attention modules being recorded, each with its list of weights; empty outside
# `attention_maps`. A context variable rather than a flag on the modules: nothing to reset, and
# a recording in one thread does not slow another. The default is read-only: recordings set a
# new mapping, never add to the one shared by every context.
_RECORDING: ContextVar[Mapping[nn.Module, list[Tensor]]] = ContextVar(
    "attention_maps", default=MappingProxyType({})
)


@contextmanager
def attention_maps(model: nn.Module) -> Iterator[dict[str, list[Tensor]]]:
    """Record the attention weights of every MultiHeadAttention in `model` inside the block.

    Yields {module name: [weights (B, H, Tq, Tk) of each call, in order]}; incremental decoding
    adds one entry per step. Recorded modules compute attention written out (no dropout on the
    weights) instead of the fused kernel, so the maps are exact but slower.

        with attention_maps(model) as maps:
            model(x)
        first = maps["encoder.layers.0.self_attn"][0]
    """
    maps = {name: [] for name, m in model.named_modules() if isinstance(m, MultiHeadAttention)}
    modules = {m: maps[name] for name, m in model.named_modules() if name in maps}
    token = _RECORDING.set({**_RECORDING.get(), **modules})
    try:
        yield maps
    finally:
        _RECORDING.reset(token)
