"""Encoder and decoder layers: attention and FFN sublayers, each wrapped in a residual.

Shape key: B batch, T target length, S source length, D model dim.
"""

from __future__ import annotations

from typing import Callable

from timm.layers import DropPath
from torch import Tensor, nn

from zoo.blocks.attention import MultiHeadAttention
from zoo.blocks.cache import DecoderLayerCache
from zoo.blocks.ffn import FeedForward
from zoo.blocks.norms import build_norm


class Residual(nn.Module):
    """x + dropout(f(x)) with the norm after (post-norm, the paper) or before (pre-norm).

    Post-norm: LayerNorm(x + Dropout(f(x))), the paper's section 5.4 residual dropout.
    Pre-norm: x + DropPath(Dropout(f(LayerNorm(x)))), the layout of ViT, BERT-style
    pre-LN variants and most modern models; stable without warm-up tuning.
    """

    def __init__(self, dim: int, *, norm: str = "layer", norm_eps: float = 1e-5,
                 pre_norm: bool = False, dropout: float = 0.0, drop_path: float = 0.0) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.norm = build_norm(norm, dim, eps=norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.pre_norm:
            return x + self.drop_path(self.dropout(sublayer(self.norm(x))))
        return self.norm(x + self.drop_path(self.dropout(sublayer(x))))


class EncoderLayer(nn.Module):
    """Self-attention then FFN.

    Args:
        dim: model width D. num_heads: H. ffn_dim: FFN hidden width.
        dropout: residual dropout (the paper's P_drop).
        attn_dropout: dropout on attention weights. ffn_dropout: dropout inside the FFN.
        activation: FFN activation ("relu" | "gelu"). norm: "layer" | "rms".
        pre_norm: pre-norm residuals instead of the paper's post-norm.
        drop_path: stochastic-depth rate of this layer (ViT/DeiT).
        bias: biases in the linear layers.
    """

    def __init__(self, dim: int, num_heads: int, ffn_dim: int, *, dropout: float = 0.1,
                 attn_dropout: float = 0.0, ffn_dropout: float = 0.0, activation: str = "relu",
                 norm: str = "layer", norm_eps: float = 1e-5, pre_norm: bool = False,
                 drop_path: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        self.residual_args = dict(norm=norm, norm_eps=norm_eps, pre_norm=pre_norm, dropout=dropout,
                                  drop_path=drop_path)
        self.self_attn = MultiHeadAttention(dim, num_heads, dropout=attn_dropout, bias=bias)
        self.self_attn_res = Residual(dim, **self.residual_args)
        self.ffn = FeedForward(dim, ffn_dim, activation=activation, dropout=ffn_dropout, bias=bias)
        self.ffn_res = Residual(dim, **self.residual_args)

    def forward(self, x: Tensor, *, mask: Tensor | None = None) -> Tensor:
        x = self.self_attn_res(x, lambda h: self.self_attn(h, mask=mask))
        return self.ffn_res(x, self.ffn)


class DecoderLayer(EncoderLayer):
    """Causal self-attention, cross-attention over the encoder output, then FFN.

    Takes the same arguments as EncoderLayer.
    """

    def __init__(self, dim: int, num_heads: int, ffn_dim: int, **kwargs) -> None:
        super().__init__(dim, num_heads, ffn_dim, **kwargs)
        self.cross_attn = MultiHeadAttention(dim, num_heads, dropout=self.self_attn.dropout,
                                             bias=self.self_attn.out_proj.bias is not None)
        self.cross_attn_res = Residual(dim, **self.residual_args)

    def forward(self, x: Tensor, memory: Tensor | None, *, self_mask: Tensor | None = None,
                is_causal: bool = False, memory_mask: Tensor | None = None,
                cache: DecoderLayerCache | None = None) -> Tensor:
        """x (B, T, D), memory (B, S, D) -> (B, T, D). `memory` may be None once cached."""
        self_cache = cache.self_attn if cache is not None else None
        cross_cache = cache.cross_attn if cache is not None else None
        x = self.self_attn_res(x, lambda h: self.self_attn(
            h, mask=self_mask, is_causal=is_causal, cache=self_cache))
        x = self.cross_attn_res(x, lambda h: self.cross_attn(
            h, memory, mask=memory_mask, cache=cross_cache))
        return self.ffn_res(x, self.ffn)
