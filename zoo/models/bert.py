"""BERT (Devlin et al., 2019) for pretraining, assembled from zoo.blocks (Hugging Face's
`BertForPreTraining` weights convert both ways in zoo.convert.hf_bert).

The encoder is the paper's post-norm Transformer encoder with GELU and LayerNorm eps 1e-12; the
input is word + learned position + token type embeddings, normalised. Two heads read it: the
masked-LM head (dense, GELU, LayerNorm, then the word embeddings transposed plus a bias of its
own) and the next-sentence head (a linear layer over the pooled [CLS] state). Every weight starts
N(0, 0.02), biases zero, norms one (`initializer_range` of the original).

Shape key: B batch, T tokens, D model dim, V vocabulary, M predicted (masked) positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor, nn

from zoo.blocks import Dropout, Encoder, LayerSpec, LearnedPositions, TokenEmbedding
from zoo.blocks.linear import Linear, linear

INIT_STD = 0.02


@dataclass
class BertModelConfig:
    num_layers: int = field(default=12, metadata={"help": "encoder layers L (BERT-base 12)"})
    dim: int = field(default=768, metadata={"help": "hidden size H (BERT-base 768)"})
    num_heads: int = field(default=12, metadata={"help": "attention heads A (BERT-base 12)"})
    ffn_dim: int = field(default=3072, metadata={"help": "feed-forward width (4 H)"})
    max_len: int = field(default=512, metadata={"help": "positions of the learned table"})
    type_vocab_size: int = field(default=2, metadata={"help": "token types (segments A and B)"})
    dropout: float = field(default=0.1, metadata={"help": "dropout on embeddings and residual branches"})
    attn_dropout: float = field(default=0.1, metadata={"help": "dropout on attention weights"})
    norm_eps: float = field(default=1e-12, metadata={"help": "LayerNorm epsilon (BERT: 1e-12)"})


class PretrainingLogits(NamedTuple):
    """mlm: (B, T, V); (M, V) at masked positions given as a bool mask, in row-major order; or
    (B, P, V) at positions given as indices. nsp: (B, 2), index 0 = B continues A (Hugging
    Face's next_sentence_label)."""

    mlm: Tensor
    nsp: Tensor


class BertEmbeddings(nn.Module):
    """ids (B, T), token types (B, T) -> LayerNorm(word + position + type) with dropout (B, T, D)."""

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        max_len: int,
        type_vocab_size: int,
        pad_id: int,
        dropout: float,
        norm_eps: float,
    ) -> None:
        super().__init__()
        self.tokens = TokenEmbedding(vocab_size, dim, padding_idx=pad_id, scale=False)
        self.positions = LearnedPositions(max_len, dim)
        self.token_types = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=norm_eps)
        self.dropout = Dropout(dropout)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        x = self.tokens(input_ids) + self.positions(input_ids.shape[1]) + self.token_types(token_type_ids)
        return self.dropout(self.norm(x))


class MaskedLMHead(nn.Module):
    """hidden (..., D) -> logits (..., V): dense, GELU, LayerNorm, then the tied word embeddings
    transposed (passed in, so the weight has one owner) plus this head's bias."""

    def __init__(self, dim: int, vocab_size: int, *, norm_eps: float) -> None:
        super().__init__()
        self.dense = Linear(dim, dim)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(dim, eps=norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: Tensor, word_embeddings: Tensor) -> Tensor:
        return linear(self.norm(self.act(self.dense(hidden))), word_embeddings, self.bias)


class Bert(nn.Module):
    """BERT with its pooler and both pretraining heads.

    Args:
        vocab_size: V. dim: D. num_layers: encoder layers. num_heads: attention heads.
        ffn_dim: feed-forward width. max_len: positions. type_vocab_size: segment types.
        pad_id: the [PAD] id (its embedding row starts at zero, as in Hugging Face).
        dropout: on embeddings and residual branches. attn_dropout: on attention weights.
        norm_eps: every LayerNorm's epsilon.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        dim: int,
        num_layers: int,
        num_heads: int,
        ffn_dim: int,
        max_len: int = 512,
        type_vocab_size: int = 2,
        pad_id: int = 0,
        dropout: float = 0.1,
        attn_dropout: float = 0.1,
        norm_eps: float = 1e-12,
    ) -> None:
        super().__init__()
        self.vocab_size, self.pad_id, self.max_len = vocab_size, pad_id, max_len
        self.embeddings = BertEmbeddings(
            vocab_size,
            dim,
            max_len=max_len,
            type_vocab_size=type_vocab_size,
            pad_id=pad_id,
            dropout=dropout,
            norm_eps=norm_eps,
        )
        spec = LayerSpec(
            dim,
            num_heads,
            ffn_dim,
            dropout=dropout,
            attn_dropout=attn_dropout,
            activation="gelu",
            norm_eps=norm_eps,
            pre_norm=False,
        )
        self.encoder = Encoder.uniform(num_layers, spec, final_norm=False)
        self.pooler = Linear(dim, dim)
        self.mlm_head = MaskedLMHead(dim, vocab_size, norm_eps=norm_eps)
        self.nsp_head = Linear(dim, 2)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """The original initialisation: N(0, 0.02) weights and embeddings, zero biases (the
        [PAD] row too), unit norms."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=INIT_STD)
            if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
        nn.init.normal_(self.embeddings.positions.weight, std=INIT_STD)
        self.embeddings.tokens.weight[self.pad_id].zero_()
        nn.init.zeros_(self.mlm_head.bias)

    def encode(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        """ids (B, T) -> hidden states (B, T, D). attention_mask: bool (B, T), True on real
        tokens (default: every id but [PAD])."""
        if input_ids.shape[1] > self.max_len:
            raise ValueError(f"sequence of {input_ids.shape[1]} tokens exceeds max_len {self.max_len}")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = input_ids != self.pad_id
        x = self.embeddings(input_ids, token_type_ids)
        return self.encoder(x, pad_mask=attention_mask[:, None, None, :].bool())

    def pool(self, hidden: Tensor) -> Tensor:
        """The pooled representation (B, D): tanh(dense(hidden of [CLS]))."""
        return torch.tanh(self.pooler(hidden[:, 0]))

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        *,
        masked_positions: Tensor | None = None,
    ) -> PretrainingLogits:
        """Both heads' logits.

        Args:
            masked_positions: bool (B, T); when given, the MLM head runs only there and returns
                (M, V) rather than (B, T, V): the vocabulary projection dominates a small
                model's cost and pretraining predicts 15% of the tokens. Or long (B, P), P
                positions per row (the original's `masked_lm_positions`, padded to
                `max_predictions_per_seq`), returning (B, P, V): a shape that does not depend on
                the data, so torch.compile keeps one graph where a mask's M would break it.
        """
        hidden = self.encode(input_ids, token_type_ids, attention_mask)
        if masked_positions is None:
            predicted = hidden
        elif masked_positions.dtype == torch.bool:
            predicted = hidden[masked_positions]
        else:
            index = masked_positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
            predicted = hidden.gather(1, index)
        mlm = self.mlm_head(predicted, self.embeddings.tokens.weight)
        return PretrainingLogits(mlm, self.nsp_head(self.pool(hidden)))


class FixedWidthPositions(NamedTuple):
    """The original BERT's `masked_lm_positions` and `masked_lm_weights`: index (B, P) of the
    predicted positions in order, padded with 0; taken (B, P) bool, False at padding."""

    index: Tensor
    taken: Tensor


def fixed_width_positions(chosen: Tensor, width: int) -> FixedWidthPositions:
    """The True positions of `chosen` (B, T) as P = `width` indices per row: a shape that does
    not depend on the data, for torch.compile. Rows with more than `width` lose the rest (the
    pretraining data never has more than `max_predictions_per_seq`)."""
    if chosen.shape[1] < width:
        chosen = torch.cat([chosen, chosen.new_zeros(chosen.shape[0], width - chosen.shape[1])], dim=1)
    # A stable sort of "not chosen" puts each row's chosen positions first, in order.
    order = torch.sort((~chosen).to(torch.uint8), dim=1, stable=True).indices[:, :width]
    taken = chosen.gather(1, order)
    return FixedWidthPositions(order.masked_fill(~taken, 0), taken)


def build_bert(cfg: BertModelConfig, vocab_size: int, pad_id: int) -> Bert:
    """The BERT a config describes, for a vocabulary of `vocab_size` with [PAD] at `pad_id`."""
    return Bert(
        vocab_size=vocab_size,
        dim=cfg.dim,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        ffn_dim=cfg.ffn_dim,
        max_len=cfg.max_len,
        type_vocab_size=cfg.type_vocab_size,
        pad_id=pad_id,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        norm_eps=cfg.norm_eps,
    )
