"""The chart parser's network (Kitaev & Klein, 2018). `build_model` is the only place its
config turns into modules.

The chart parser reads BOS w_1 .. w_n EOS (word embeddings plus a character CNN, plus
positions) with a zoo.blocks Encoder. As in Kitaev & Klein, each output vector is split in a
forward and a backward half; fencepost k (between words k and k+1) takes the forward half of
position k and the backward half of position k+1, and span (i, j) is represented by the
differences [f_j - f_i ; b_i - b_j]. A two-layer MLP scores every non-empty label of every span;
the empty label scores 0. Part-of-speech tags come from a linear classifier on each word's
output, not from the span classifier (as in Kitaev et al., 2019).

Factored (`model.partitioned`, K&K's section 3.1): words, characters and BERT make a content
vector of D/2, positions the other D/2, and the encoder keeps them apart
(zoo.blocks.partitioned); its output is then interleaved as benepar does, so that the forward
and backward halves each read content and position features.

With a pretrained BERT (`model.pretrained`), its last layer at each word's first WordPiece,
projected to D, is added to the word's input, and the BERT is fine-tuned with the parser (Kitaev
et al., 2019, keep the self-attentive layers above it as well; tasks.parsing.bert).

Shape key: B sentences, T = n + 2 input positions, n words, D model dim, L labels, K tags.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tasks.parsing.bert import BertReader, bert_reader
from tasks.parsing.chart.config import ChartModelConfig
from tasks.parsing.data import Vocab
from zoo.blocks import (
    ConcatPositions,
    Encoder,
    LayerSpec,
    SequenceEmbedding,
    TokenEmbedding,
    init_transformer_,
    padding_mask,
    partition_,
)
from zoo.data.special import SPECIAL_IDS


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
        embed: word ids -> (B, T, D) with positions, or (B, T, D/2) content when factored.
        chars: a CharCNN or None. encoder: the self-attentive encoder.
        label_mlp: (.., D) span -> (.., L - 1). tagger: (.., D) word -> (.., K).
        bert: a BertReader or None. positions: ConcatPositions for a factored encoder, or None.
    """

    def __init__(
        self,
        embed: SequenceEmbedding | TokenEmbedding,
        chars: CharCNN | None,
        encoder: Encoder,
        label_mlp: nn.Module,
        tagger: nn.Linear,
        *,
        max_len: int,
        bert: BertReader | None = None,
        positions: ConcatPositions | None = None,
    ) -> None:
        super().__init__()
        self.embed, self.chars, self.encoder = embed, chars, encoder
        self.label_mlp, self.tagger = label_mlp, tagger
        self.max_len = max_len
        self.bert = bert
        self.positions = positions

    def forward(
        self, words: Tensor, chars: Tensor, pieces: Tensor | None = None, first: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        x = self.embed(words)
        if self.chars is not None:
            x = x + self.chars(chars)
        if self.bert is not None:
            if pieces is None or first is None:
                raise ValueError(
                    "this parser reads a BERT: give the sentences' pieces (ChartInput.model_inputs)"
                )
            x = x + self.bert(pieces, first)
        if self.positions is not None:
            x = self.positions(x)
        h = self.encoder(x, pad_mask=padding_mask(words, SPECIAL_IDS.pad))
        if self.positions is not None:  # [content ; position] -> halves that each read both
            h = torch.cat([h[..., 0::2], h[..., 1::2]], dim=-1)
        half = h.shape[-1] // 2
        forward, backward = h[:, :-1, :half], h[:, 1:, half:]  # fenceposts 0..n: (B, n+1, D/2)
        spans = torch.cat(
            [
                forward[:, None, :, :] - forward[:, :, None, :],
                backward[:, :, None, :] - backward[:, None, :, :],
            ],
            dim=-1,
        )  # [i, j]
        labels = self.label_mlp(spans)
        scores = torch.cat([labels.new_zeros(*labels.shape[:-1], 1), labels], dim=-1)
        return scores, self.tagger(h[:, 1:-1])

    def lr_scales(self) -> dict[str, float]:
        """zoo.train.optim's per-part learning-rate multipliers: the pretrained BERT's, if any."""
        scales = self.bert.lr_scales() if self.bert is not None else {}
        return {f"bert.{prefix}": scale for prefix, scale in scales.items()}


class ChartEnsemble(nn.Module):
    """Chart parsers trained on one treebank vocabulary, read as one (fairseq's `--path a:b`):
    the members' span scores are averaged, so CKY finds the tree with the best mean score, and
    so are their tag log-probabilities. Same inputs and outputs as a ChartParser."""

    def __init__(self, members: list[ChartParser]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, *inputs: Tensor | None) -> tuple[Tensor, Tensor]:
        scores, tags = zip(*(member(*inputs) for member in self.members))
        return torch.stack(scores).mean(0), torch.stack([t.log_softmax(-1) for t in tags]).mean(0)


def build_model(cfg: ChartModelConfig, vocab: Vocab) -> ChartParser:
    """A chart parser, freshly initialised, sized for `vocab`."""
    spec = LayerSpec(
        cfg.dim,
        cfg.num_heads,
        cfg.ffn_dim,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        pre_norm=cfg.pre_norm,
    )
    content = cfg.dim // 2 if cfg.partitioned else cfg.dim
    if cfg.partitioned:
        embed = TokenEmbedding(len(vocab.words), content, padding_idx=SPECIAL_IDS.pad)
    else:
        embed = SequenceEmbedding(
            len(vocab.words),
            cfg.dim,
            max_len=cfg.max_len,
            padding_idx=SPECIAL_IDS.pad,
            positions=cfg.positions,
            dropout=cfg.dropout,
        )
    chars = CharCNN(len(vocab.chars), cfg.char_dim, content) if cfg.char_dim else None
    encoder = init_transformer_(Encoder.uniform(cfg.encoder_layers, spec))
    positions = None
    if cfg.partitioned:
        partition_(encoder)
        positions = ConcatPositions(cfg.max_len, cfg.dim, positions=cfg.positions, dropout=cfg.dropout)
    label_mlp = nn.Sequential(
        nn.Linear(cfg.dim, cfg.label_hidden),
        nn.LayerNorm(cfg.label_hidden),
        nn.ReLU(),
        nn.Linear(cfg.label_hidden, len(vocab.labels) - 1),
    )
    return ChartParser(
        embed,
        chars,
        encoder,
        label_mlp,
        nn.Linear(cfg.dim, len(vocab.tags)),
        max_len=cfg.max_len,
        bert=bert_reader(vocab.bert_spec, content, cfg.pretrained_lr_scale),
        positions=positions,
    )
