"""The two parsers' networks: the chart parser (Kitaev & Klein, 2018) and the paper's
encoder-decoder from zoo.models. `build_model` is the only place the config turns into modules.

The chart parser reads BOS w_1 .. w_n EOS (word embeddings plus a character CNN, plus
positions) with a zoo.blocks Encoder. As in Kitaev & Klein, each output vector is split in a
forward and a backward half; fencepost k (between words k and k+1) takes the forward half of
position k and the backward half of position k+1, and span (i, j) is represented by the
differences [f_j - f_i ; b_i - b_j]. A two-layer MLP scores every non-empty label of every span;
the empty label scores 0. Part-of-speech tags come from a linear classifier on each word's
output, not from the span classifier (as in Kitaev et al., 2019).

Shape key: B sentences, T = n + 2 input positions, n words, D model dim, L labels, K tags.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tasks.parsing.config import KINDS, ModelConfig
from tasks.parsing.data import Vocab
from zoo.blocks import Encoder, LayerSpec, SequenceEmbedding, init_transformer_, padding_mask
from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.models.encoder_decoder import ModelConfig as TransformerConfig
from zoo.models.encoder_decoder import Transformer
from zoo.models.encoder_decoder import build_model as build_transformer


class CharCNN(nn.Module):
    """chars (B, T, C) -> (B, T, D): character embeddings, a width-3 convolution, max over the word."""

    def __init__(self, num_chars: int, char_dim: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_chars, char_dim, padding_idx=SPECIAL_IDS.pad)
        self.conv = nn.Conv1d(char_dim, dim, kernel_size=3, padding=1)

    def forward(self, chars: Tensor) -> Tensor:
        b, t, c = chars.shape
        x = self.conv(self.embed(chars.view(b * t, c)).transpose(1, 2))  # (B*T, D, C)
        x = x.masked_fill((chars.view(b * t, 1, c) == SPECIAL_IDS.pad), float("-inf"))
        return x.max(dim=-1).values.nan_to_num(neginf=0.0).view(b, t, -1)


class ChartParser(nn.Module):
    """Span label scores (B, n+1, n+1, L) with label 0 = empty fixed at 0, and tag logits (B, n, K).

    Args:
        embed: word ids -> (B, T, D) with positions. chars: a CharCNN or None.
        encoder: the self-attentive encoder. label_mlp: (.., D) span -> (.., L - 1).
        tagger: (.., D) word -> (.., K).
    """

    def __init__(self, embed: SequenceEmbedding, chars: CharCNN | None, encoder: Encoder,
                 label_mlp: nn.Module, tagger: nn.Linear, *, max_len: int) -> None:
        super().__init__()
        self.embed, self.chars, self.encoder = embed, chars, encoder
        self.label_mlp, self.tagger = label_mlp, tagger
        self.max_len = max_len

    def forward(self, words: Tensor, chars: Tensor) -> tuple[Tensor, Tensor]:
        x = self.embed(words)
        if self.chars is not None:
            x = x + self.chars(chars)
        h = self.encoder(x, pad_mask=padding_mask(words, SPECIAL_IDS.pad))
        half = h.shape[-1] // 2
        forward, backward = h[:, :-1, :half], h[:, 1:, half:]  # fenceposts 0..n: (B, n+1, D/2)
        spans = torch.cat([forward[:, None, :, :] - forward[:, :, None, :],
                           backward[:, :, None, :] - backward[:, None, :, :]], dim=-1)  # [i, j]
        labels = self.label_mlp(spans)
        scores = torch.cat([labels.new_zeros(*labels.shape[:-1], 1), labels], dim=-1)
        return scores, self.tagger(h[:, 1:-1])


def build_model(cfg: ModelConfig, vocab: Vocab) -> ChartParser | Transformer:
    """The parser `cfg.kind` names, freshly initialised, sized for `vocab`."""
    if cfg.kind not in KINDS:
        raise UserError(f"model.kind: unknown {cfg.kind!r}; expected one of {KINDS}")
    if cfg.kind == "seq2seq":
        transformer = TransformerConfig(
            encoder_layers=cfg.encoder_layers, decoder_layers=cfg.decoder_layers, dim=cfg.dim,
            ffn_dim=cfg.ffn_dim, num_heads=cfg.num_heads, dropout=cfg.dropout,
            attn_dropout=cfg.attn_dropout, pre_norm=cfg.pre_norm, positions=cfg.positions,
            max_len=cfg.max_len, share_embeddings=False)  # words in, tree symbols out
        return build_transformer(transformer, len(vocab.words), len(vocab.symbols), SPECIAL_IDS.pad)
    spec = LayerSpec(cfg.dim, cfg.num_heads, cfg.ffn_dim, dropout=cfg.dropout,
                     attn_dropout=cfg.attn_dropout, pre_norm=cfg.pre_norm)
    embed = SequenceEmbedding(len(vocab.words), cfg.dim, max_len=cfg.max_len, padding_idx=SPECIAL_IDS.pad,
                              positions=cfg.positions, dropout=cfg.dropout)
    chars = CharCNN(len(vocab.chars), cfg.char_dim, cfg.dim) if cfg.char_dim else None
    encoder = init_transformer_(Encoder.uniform(cfg.encoder_layers, spec))
    label_mlp = nn.Sequential(nn.Linear(cfg.dim, cfg.label_hidden), nn.LayerNorm(cfg.label_hidden),
                              nn.ReLU(), nn.Linear(cfg.label_hidden, len(vocab.labels) - 1))
    return ChartParser(embed, chars, encoder, label_mlp, nn.Linear(cfg.dim, len(vocab.tags)),
                       max_len=cfg.max_len)
