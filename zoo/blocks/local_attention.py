"""Restricted self-attention (the paper's section 4) computed blockwise in O(T w D).

Masking full attention with `local_mask` gives the same numbers but still computes all T x T
scores. Here the sequence is cut into chunks of `window` positions; every query in a chunk can
only see keys in its own chunk and the one before (and, unless causal, the one after), so each
chunk attends to 3 (causal: 2) chunks of keys. Cost: 4 B T (3 w) D multiply-adds instead of
4 B T^2 D, the paper's O(r n d) with r = 2 w + 1.

Shape key: B batch, T length, H heads, Dh head dim, D model dim, M chunks, C chunk length,
K keys per chunk.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from zoo.blocks.attention import _RECORDING, MultiHeadAttention
from zoo.blocks.cache import KVCache
from zoo.blocks.masks import causal_mask, local_mask


def _chunk_mask(
    length: int, chunk: int, num_chunks: int, span: int, *, window: int, causal: bool, device: torch.device
) -> Tensor:
    """(M, C, K) bool: which of the K = `span` keys gathered for a chunk (starting one chunk
    before it) each of its queries sees.

    Keys outside the sequence (padding) are hidden, except that a padded query keeps its own
    (padded) position so that no softmax row is empty; those rows are cut off afterwards.
    """
    q_pos = (
        torch.arange(num_chunks, device=device)[:, None, None] * chunk
        + torch.arange(chunk, device=device)[None, :, None]
    )
    k_pos = (torch.arange(num_chunks, device=device)[:, None, None] - 1) * chunk + torch.arange(
        span, device=device
    )[None, None, :]
    offset = k_pos - q_pos
    band = (offset <= 0) & (offset >= -window) if causal else offset.abs() <= window
    inside = (k_pos >= 0) & (k_pos < length)
    return band & (inside | (offset == 0))


def _diagonal(chunk: int, num_chunks: int, span: int, device: torch.device) -> Tensor:
    """(M, C, K) bool: each query's own key (at K index chunk + c)."""
    own = torch.arange(chunk, device=device)[:, None] + chunk == torch.arange(span, device=device)
    return own.expand(num_chunks, chunk, span)


class LocalAttention(MultiHeadAttention):
    """Self-attention where position i sees only positions j with |i - j| <= window
    (causal: i - window <= j <= i).

    Same parameters and state-dict keys as MultiHeadAttention, so its output equals
    `MultiHeadAttention(x, mask=local_mask(T, window=window) [& causal_mask(T)] [& key_mask])`
    with the same weights; only the cost differs. Self-attention only (no context). With a
    cache (incremental decoding: a few new queries against the cache), or while
    `attention_maps` records it, it runs MultiHeadAttention's path on the mask the caller gives
    (the decoder stack passes the band with the cache offset).

    Args:
        dim: model width D.
        num_heads: H; must divide `dim`.
        window: half-width w of the neighbourhood (the paper's r = 2 w + 1).
        dropout: dropout on the attention weights (training only).
        bias: whether the projections have biases.
    """

    def __init__(
        self, dim: int, num_heads: int, *, window: int, dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__(dim, num_heads, dropout=dropout, bias=bias)
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        self.window = window

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        *,  # type: ignore[override]
        mask: Tensor | None = None,
        is_causal: bool = False,
        cache: KVCache | None = None,
    ) -> Tensor:
        """(B, T, D) -> (B, T, D).

        Args:
            context: must be None (self-attention only).
            mask: without a cache, a key mask (B, 1, 1, T), True at real positions (padding);
                with a cache, the full mask (band, causality and padding) for MultiHeadAttention.
            is_causal: also hide the future (position i sees i - window .. i).
            cache: a self-attention KV cache (incremental decoding).
        """
        if context is not None:
            raise ValueError("LocalAttention is self-attention only")
        if cache is not None:
            return super().forward(x, mask=mask, is_causal=is_causal, cache=cache)
        if self in _RECORDING.get():  # maps need the (T, T) weights: the band written out
            t = x.shape[1]
            band = local_mask(t, window=self.window, device=x.device)
            if is_causal:
                band = band & causal_mask(t, device=x.device)
            return super().forward(x, mask=band if mask is None else band & mask)
        return self._blockwise(x, mask, is_causal)

    def _blockwise(self, x: Tensor, key_mask: Tensor | None, is_causal: bool) -> Tensor:
        b, t, _ = x.shape
        h, dh = self.num_heads, self.head_dim
        # Chunks of w positions suffice for the band to stay within the neighbouring chunks; a
        # chunk longer than the sequence would only add padding.
        chunk = max(1, min(self.window, t))
        num_chunks = -(-t // chunk)
        pad = num_chunks * chunk - t
        after = 0 if is_causal else 1
        span = (2 + after) * chunk  # the chunk before, the chunk itself, the chunk after
        q, k, v = (self._split_heads(z) for z in self.qkv_proj(x).chunk(3, dim=-1))
        # (B, H, T, Dh) -> (B H, M, C, Dh): the chunks play the part of SDPA's head dimension, so
        # the (M, C, K) mask broadcasts over B H and the fused kernel takes it.
        q = F.pad(q, (0, 0, 0, pad)).reshape(b * h, num_chunks, chunk, dh)
        k, v = (
            F.pad(z, (0, 0, chunk, pad + after * chunk))
            .unfold(2, span, chunk)
            .transpose(-1, -2)
            .reshape(b * h, num_chunks, span, dh)
            for z in (k, v)
        )
        mask = _chunk_mask(t, chunk, num_chunks, span, window=self.window, causal=is_causal, device=x.device)
        if key_mask is not None:
            mask = mask & self._chunk_keys(key_mask, t, chunk, num_chunks, span, after)
            mask = mask | _diagonal(chunk, num_chunks, span, x.device)  # no empty softmax row
            mask = mask.unsqueeze(1).expand(b, h, *mask.shape[1:]).reshape(b * h, *mask.shape[1:])
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0
        )
        # (B H, M, C, Dh) -> (B, H, T, Dh)
        return self._merge_heads(out.reshape(b, h, num_chunks * chunk, dh)[:, :, :t])

    @staticmethod
    def _chunk_keys(
        key_mask: Tensor, length: int, chunk: int, num_chunks: int, span: int, after: int
    ) -> Tensor:
        """A (B, 1, 1, T) key mask gathered like the keys: (B, M, 1, K)."""
        keys = key_mask.reshape(key_mask.shape[0], -1).expand(-1, length)
        keys = F.pad(keys, (chunk, num_chunks * chunk - length + after * chunk), value=False)
        return keys.unfold(1, span, chunk)[:, :, None, :]
