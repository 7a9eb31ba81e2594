"""Token embeddings and the input layer of sequence models."""

from __future__ import annotations

import math

from torch import Tensor, nn

from zoo.blocks.dropout import Dropout
from zoo.blocks.positions import build_positions


class TokenEmbedding(nn.Embedding):
    """nn.Embedding whose output is scaled by sqrt(D) (the paper, section 3.4).

    Initialised N(0, D^-1/2) so the scaled output has unit variance, as in fairseq/tensor2tensor.
    Its `weight` can be tied to a pre-softmax projection (`nn.Linear.weight = emb.weight`).
    """

    def __init__(
        self, vocab_size: int, dim: int, *, padding_idx: int | None = None, scale: bool = True
    ) -> None:
        super().__init__(vocab_size, dim, padding_idx=padding_idx)
        self.scale = math.sqrt(dim) if scale else 1.0
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, mean=0.0, std=self.embedding_dim**-0.5)
        self._fill_padding_idx_with_zero()

    def forward(self, tokens: Tensor) -> Tensor:
        return super().forward(tokens) * self.scale


class SequenceEmbedding(nn.Module):
    """tokens (B, T) -> dropout(TokenEmbedding(tokens) + positions) of shape (B, T, D).

    Args:
        vocab_size, dim, padding_idx: as for TokenEmbedding.
        max_len: longest sequence the position table covers.
        positions: a key of POSITIONS ("sinusoidal" as in the paper, or "learned").
        position_scale: multiplies the sinusoids (zoo.blocks.positions.SinusoidalPositions).
        dropout: the paper's dropout on the sums of embeddings and encodings.
        token_embedding: an existing TokenEmbedding to share (the paper ties source, target and
            output embeddings).
    """

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        max_len: int,
        padding_idx: int | None = None,
        positions: str = "sinusoidal",
        position_scale: float = 1.0,
        dropout: float = 0.0,
        token_embedding: TokenEmbedding | None = None,
    ) -> None:
        super().__init__()
        self.tokens = token_embedding or TokenEmbedding(vocab_size, dim, padding_idx=padding_idx)
        self.positions = build_positions(positions, max_len, dim, scale=position_scale)
        self.dropout = Dropout(dropout)

    def forward(self, tokens: Tensor, offset: int = 0) -> Tensor:
        x = self.tokens(tokens) + self.positions(tokens.shape[1], offset)
        return self.dropout(x)
