"""Encoder and decoder layers: attention and FFN sublayers, each wrapped in a residual.

A `LayerSpec` holds the typed arguments of one layer; stacks build every layer from the same
spec (with its own drop-path rate). Shape key: B batch, T target length, S source length,
D model dim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from timm.layers import DropPath
from torch import Tensor, nn

from zoo.blocks.attention import MultiHeadAttention
from zoo.blocks.attention_scores import SCORES
from zoo.blocks.cache import DecoderLayerCache
from zoo.blocks.dropout import Dropout
from zoo.blocks.ffn import ACTIVATIONS, FeedForward
from zoo.blocks.kv_cache import KVCache
from zoo.blocks.local_attention import LocalAttention
from zoo.blocks.norms import NORMS, build_norm
from zoo.blocks.packing import RealTokens


@dataclass(frozen=True)
class LayerSpec:
    """The arguments of one encoder or decoder layer.

    Args:
        dim: model width D. num_heads: H. ffn_dim: FFN hidden width.
        dropout: residual dropout (the paper's P_drop).
        attn_dropout: dropout on attention weights. ffn_dropout: dropout inside the FFN.
        activation: a key of ACTIVATIONS ("relu" the paper, "gelu" BERT/ViT).
        norm: a key of NORMS ("layer" | "rms"). norm_eps: its epsilon (BERT 1e-12, ViT 1e-6).
        pre_norm: pre-norm residuals instead of the paper's post-norm (BERT is post-norm).
        window: restricted self-attention half-width (LocalAttention); None = full attention.
        attention_score: a key of SCORES ("scaled_dot" the paper, "dot", "additive"), for every
            attention of the layer. key_dim: per-head width of queries and keys (None = dim /
            num_heads). Restricted attention takes neither.
        bias: biases in the linear layers.
        drop_path: stochastic-depth rate of this layer (stacks set it per layer from their
            `drop_path_rate`).
    """

    dim: int
    num_heads: int
    ffn_dim: int
    dropout: float = 0.1
    attn_dropout: float = 0.0
    ffn_dropout: float = 0.0
    activation: str = "relu"
    norm: str = "layer"
    norm_eps: float = 1e-5
    pre_norm: bool = False
    window: int | None = None
    attention_score: str = "scaled_dot"
    key_dim: int | None = None
    bias: bool = True
    drop_path: float = 0.0

    def __post_init__(self) -> None:
        for name, value, table in (
            ("activation", self.activation, ACTIVATIONS),
            ("norm", self.norm, NORMS),
            ("attention_score", self.attention_score, SCORES),
        ):
            if value not in table:
                raise ValueError(f"unknown {name} {value!r}; choose from {sorted(table)}")
        if self.window is not None and self.window < 0:
            raise ValueError(f"window must be >= 0 or None, got {self.window}")
        if self.window is not None and (self.attention_score != "scaled_dot" or self.key_dim is not None):
            raise ValueError(
                "restricted attention (window) takes the scaled dot product at dim / num_heads only"
            )

    def residual(self) -> Residual:
        return Residual(
            self.dim,
            norm=self.norm,
            norm_eps=self.norm_eps,
            pre_norm=self.pre_norm,
            dropout=self.dropout,
            drop_path=self.drop_path,
        )

    def self_attention(self) -> MultiHeadAttention:
        """Full attention, or the O(T w D) LocalAttention when `window` is set."""
        if self.window is None:
            return self.cross_attention()
        return LocalAttention(
            self.dim, self.num_heads, window=self.window, dropout=self.attn_dropout, bias=self.bias
        )

    def cross_attention(self) -> MultiHeadAttention:
        return MultiHeadAttention(
            self.dim,
            self.num_heads,
            dropout=self.attn_dropout,
            bias=self.bias,
            score=self.attention_score,
            key_dim=self.key_dim,
        )

    def feed_forward(self) -> FeedForward:
        return FeedForward(
            self.dim, self.ffn_dim, activation=self.activation, dropout=self.ffn_dropout, bias=self.bias
        )


class Residual(nn.Module):
    """x + dropout(f(x)) with the norm after (post-norm, the paper) or before (pre-norm).

    Post-norm: LayerNorm(x + Dropout(f(x))), the paper's section 5.4 residual dropout.
    Pre-norm: x + DropPath(Dropout(f(LayerNorm(x)))), the layout of ViT, BERT-style
    pre-LN variants and most modern models; stable without warm-up tuning.
    """

    def __init__(
        self,
        dim: int,
        *,
        norm: str = "layer",
        norm_eps: float = 1e-5,
        pre_norm: bool = False,
        dropout: float = 0.0,
        drop_path: float = 0.0,
    ) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.norm = build_norm(norm, dim, eps=norm_eps)
        self.dropout = Dropout(dropout)
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.pre_norm:
            return x + self.drop_path(self.dropout(sublayer(self.norm(x))))
        return self.norm(x + self.drop_path(self.dropout(sublayer(x))))


class EncoderLayer(nn.Module):
    """Self-attention then FFN: (B, S, D) -> (B, S, D). With causal self-attention (and a cache
    while decoding) it is also the layer of a decoder-only model (GPT's block).

    Args:
        spec: the layer's arguments.
    """

    def __init__(self, spec: LayerSpec) -> None:
        super().__init__()
        self.self_attn = spec.self_attention()
        self.self_attn_res = spec.residual()
        self.ffn = spec.feed_forward()
        self.ffn_res = spec.residual()

    def forward(
        self,
        x: Tensor,
        *,
        mask: Tensor | None = None,
        is_causal: bool = False,
        cache: KVCache | None = None,
        queries: slice | None = None,
        real: RealTokens | None = None,
    ) -> Tensor:
        """mask: bool, True = may attend (with a window: a key padding mask (B, 1, 1, S)).
        is_causal, cache: as for MultiHeadAttention (a decoder-only stack's causal layers).

        `queries`: compute only these positions' outputs, (B, S', D); they still attend to every
        position (the sublayers act per position, so the result is the full output's slice).
        `real`: run the feed-forward sublayer on these positions alone (zoo.blocks.packing);
        not with `queries`.
        """
        if queries is None:
            x = self.self_attn_res(
                x, lambda h: self.self_attn(h, mask=mask, is_causal=is_causal, cache=cache)
            )
        elif isinstance(self.self_attn, LocalAttention):
            raise ValueError("queries is not supported with restricted (windowed) attention")
        else:
            res = self.self_attn_res
            context = res.norm(x) if res.pre_norm else x  # what every position offers as key/value
            if mask is not None and mask.shape[-2] > 1:  # a mask per query row: keep the rows asked for
                mask = mask[..., queries, :]
            x = res(x[:, queries], lambda h: self.self_attn(h, context, mask=mask))
        # drop path draws one decision per sequence, and packed tokens are no longer in sequences
        if real is not None and isinstance(self.ffn_res.drop_path, nn.Identity):
            return real.apply(lambda h: self.ffn_res(h, self.ffn), x)
        return self.ffn_res(x, self.ffn)


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder output, then FFN.

    Args:
        spec: the layer's arguments (its window restricts the self-attention only).
    """

    def __init__(self, spec: LayerSpec) -> None:
        super().__init__()
        # Registration order (which sets the random initialisation) as in earlier releases,
        # so seeded runs reproduce their published results.
        self.self_attn = spec.self_attention()
        self.self_attn_res = spec.residual()
        self.ffn = spec.feed_forward()
        self.ffn_res = spec.residual()
        self.cross_attn = spec.cross_attention()
        self.cross_attn_res = spec.residual()

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        *,
        self_mask: Tensor | None = None,
        is_causal: bool = False,
        memory_mask: Tensor | None = None,
        cache: DecoderLayerCache | None = None,
    ) -> Tensor:
        """x (B, T, D), memory (B, S, D) -> (B, T, D). `memory` may be None once cached."""
        self_cache = cache.self_attn if cache is not None else None
        cross_cache = cache.cross_attn if cache is not None else None
        x = self.self_attn_res(
            x, lambda h: self.self_attn(h, mask=self_mask, is_causal=is_causal, cache=self_cache)
        )
        x = self.cross_attn_res(x, lambda h: self.cross_attn(h, memory, mask=memory_mask, cache=cross_cache))
        return self.ffn_res(x, self.ffn)
