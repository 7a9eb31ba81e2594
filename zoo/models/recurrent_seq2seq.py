"""The recurrent encoder-decoder with additive attention that the Transformer replaced (Bahdanau
et al., 2015; the sequence-to-sequence chapter of the d2l book), behind the Transformer's
interface (zoo.models.seq2seq), so that one task, one loss, the decoders in zoo.decode and the
same scoring serve both.

Shape key: B batch, S source length, T target length, N decoding rows (g per source), E = dim
(embedding width), H = rnn_dim (decoder state, encoder annotations, attention width), L layers,
V vocabulary size.

- Encoder: a bidirectional GRU/LSTM stack, H/2 per direction, over packed sequences, so padding
  never enters a state; the concatenated outputs are Bahdanau's annotations h_j (B, S, H).
- Decoder step i, in Bahdanau's order: the context c_i = attention(query s_{i-1}, the top
  layer's previous state; keys and values from the annotations), scored additively,
  w . tanh(W q + U k_j) (zoo's MultiHeadAttention with one head and score="additive"; its value
  and output projections are two linear maps Bahdanau does without); the RNN reads
  [E y_{i-1}; c_i] and gives s_i; the output layer reads [s_i; c_i; E y_{i-1}] (Bahdanau's deep
  output, tanh in place of maxout) down to E, then the projection (tied to the embeddings when
  they are shared).
- No input feeding (Luong et al., 2015): Luong attends after the RNN step, so he feeds the
  attentional state to the next step to let it know what was attended; here the context is
  computed before the step and is already its input.
- The first state of every decoder layer is tanh(W mean_j h_j) (Bahdanau: tanh(W h_1 of the
  backward RNN); the mean over the real positions reads both directions); an LSTM's cell starts
  at zero.

Why not zoo.blocks.Recurrent, the layer of the paper's Table 1: it is one layer over a whole
unpadded sequence with input width = state width; the encoder needs packed sequences (torch's
stacked module, the same RECURRENT_CELLS), and the decoder's input is E + H wide while its
state is H.

The decoder's recurrent state is the decoding cache (`RecurrentCache`), per row, so beam search
reorders and expands it as it does the Transformer's self-attention keys; the annotations' keys
and values are per source, in a cross-attention KVCache filled at the first step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo.blocks import Dropout, KVCache, MultiHeadAttention, TokenEmbedding, padding_mask
from zoo.blocks.linear import Linear
from zoo.blocks.mixers import RECURRENT_CELLS
from zoo.config import Invalid
from zoo.models.seq2seq import Seq2Seq, output_projection

if TYPE_CHECKING:
    from zoo.models.encoder_decoder import ModelConfig

ARCHS = {"transformer": "the paper's encoder-decoder", "rnn": "the recurrent baseline of this module"}
State = tuple[Tensor, ...]  # (h,) for RNN and GRU, (h, c) for LSTM; each (L, N, H)


def check_arch_values(cfg: ModelConfig) -> None:
    """Raise zoo.config.Invalid for an unknown `arch`, or a recurrent model's `cell` or `rnn_dim`
    it could not be built with."""
    if cfg.arch not in ARCHS:
        raise Invalid("arch", f"{cfg.arch!r} is not one of {', '.join(ARCHS)}")
    if cfg.cell not in RECURRENT_CELLS:
        raise Invalid("cell", f"{cfg.cell!r} is not one of {', '.join(RECURRENT_CELLS)}")
    if cfg.rnn_dim < 2 or cfg.rnn_dim % 2:
        raise Invalid(
            "rnn_dim", f"must be even and at least 2 (half per encoder direction), not {cfg.rnn_dim}"
        )


@dataclass
class RecurrentCache:
    """Incremental decoding state: per row the decoder's recurrent `state` (empty until the first
    step), per source the attention's keys and values over the annotations."""

    annotations: KVCache = field(default_factory=lambda: KVCache(cross=True))
    state: State = ()

    def reorder(self, index: Tensor) -> None:
        """Keep the rows `index` (repeats allowed), each within its source."""
        self.state = tuple(part.index_select(1, index) for part in self.state)

    def select_sources(self, index: Tensor) -> None:
        """Keep the sources `index` (sequences leaving the batch)."""
        self.annotations.reorder(index)


class RecurrentEncoder(nn.Module):
    """Embedded source (B, S, E) and its lengths (B,) -> annotations (B, S, H), zero at padding.

    Args:
        dim: E, the embedding width.
        rnn_dim: H; each direction has H / 2.
        num_layers: stacked bidirectional layers.
        cell: a key of RECURRENT_CELLS.
        dropout: between layers (training only).
    """

    def __init__(self, dim: int, rnn_dim: int, num_layers: int, *, cell: str, dropout: float) -> None:
        super().__init__()
        self.rnn = RECURRENT_CELLS[cell](
            dim,
            rnn_dim // 2,
            num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=x.shape[1])
        return out


class AttentionDecoder(nn.Module):
    """The decoder: embedded targets (N, T, E) -> deep outputs (N, T, E), one step at a time.

    Args:
        dim: E, the embedding width (and of the deep output).
        rnn_dim: H, the state width (and of the annotations and the attention).
        num_layers: stacked layers.
        cell: a key of RECURRENT_CELLS.
        dropout: on the embedded targets, between layers and on the deep output (training only).
        attn_dropout: on the attention weights (training only).
    """

    def __init__(
        self, dim: int, rnn_dim: int, num_layers: int, *, cell: str, dropout: float, attn_dropout: float
    ) -> None:
        super().__init__()
        self.num_layers, self.rnn_dim, self.is_lstm = num_layers, rnn_dim, cell == "lstm"
        self.cross_attn = MultiHeadAttention(rnn_dim, 1, dropout=attn_dropout, score="additive")
        self.rnn = RECURRENT_CELLS[cell](
            dim + rnn_dim, rnn_dim, num_layers, batch_first=True, dropout=dropout if num_layers > 1 else 0.0
        )
        self.bridge = Linear(rnn_dim, num_layers * rnn_dim)
        self.deep_output = Linear(2 * rnn_dim + dim, dim)
        self.dropout = Dropout(dropout)

    def initial_state(self, memory: Tensor, memory_mask: Tensor, rows: int) -> State:
        """Every layer's first state, tanh(W mean_j h_j) over the real positions, for `rows`
        = g n rows over n sources (g consecutive rows per source)."""
        real = memory_mask.flatten(1).to(memory.dtype)  # (n, S)
        mean = (real[:, :, None] * memory).sum(1) / real.sum(1, keepdim=True)
        h = torch.tanh(self.bridge(mean)).view(len(memory), self.num_layers, self.rnn_dim)
        h = h.repeat_interleave(rows // len(memory), dim=0).transpose(0, 1).contiguous()
        return (h, torch.zeros_like(h)) if self.is_lstm else (h,)

    def forward(self, y: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: RecurrentCache) -> Tensor:
        """Decode the embedded targets `y` from `cache.state` on, which it advances."""
        y = self.dropout(y)
        outputs = []
        for t in range(y.shape[1]):
            query = cache.state[0][-1].unsqueeze(1)  # (N, 1, H)
            context = self.cross_attn(query, memory, mask=memory_mask, cache=cache.annotations)
            out, state = self.rnn(
                torch.cat([y[:, t : t + 1], context], dim=-1),
                cache.state if self.is_lstm else cache.state[0],
            )
            cache.state = state if self.is_lstm else (state,)
            outputs.append(torch.cat([out, context], dim=-1))
        deep = torch.cat([torch.cat(outputs, dim=1), y], dim=-1)  # (N, T, 2H + E)
        return self.dropout(torch.tanh(self.deep_output(deep)))


class RecurrentSeq2Seq(Seq2Seq):
    """Recurrent encoder-decoder with attention: source ids (B, S) and target input ids (B, T)
    -> logits (B, T, V); `forward` and `decode` are zoo.models.seq2seq's.

    Args:
        src_embed, tgt_embed: token embeddings (may be one module).
        encoder: the bidirectional encoder.
        decoder: the attention decoder.
        output: the pre-softmax projection E -> V (its weight may be tied to the embeddings).
        pad_idx: padding id of the source vocabulary.
        max_len: longest target the decoders may produce (no position table limits it; kept as
            the Transformer's, so recipes and decoders read one value).
        dropout: on the source embeddings (training only; the decoder drops its own).
    """

    def __init__(
        self,
        src_embed: TokenEmbedding,
        tgt_embed: TokenEmbedding,
        encoder: RecurrentEncoder,
        decoder: AttentionDecoder,
        output: nn.Linear,
        *,
        pad_idx: int,
        max_len: int,
        dropout: float,
    ) -> None:
        super().__init__(src_embed, tgt_embed, encoder, decoder, output, pad_idx=pad_idx, max_len=max_len)
        self.dropout = Dropout(dropout)

    def encode(self, src: Tensor, source: Any = None) -> tuple[Tensor, Tensor]:
        """src (B, S) -> annotations (B, S, H) and memory_mask (B, 1, 1, S), True at real tokens."""
        if source is not None:
            raise ValueError("the recurrent model reads source ids only (no custom source embedding)")
        memory_mask = padding_mask(src, self.pad_idx)
        lengths = memory_mask.flatten(1).sum(1)
        return self.encoder(self.dropout(self.src_embed(src)), lengths), memory_mask

    def decoder_states(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: RecurrentCache | None = None
    ) -> Tensor:
        """tgt_in (N, T) -> the deep output (N, T, E), before the projection. Without a cache,
        from the first state over the whole of `tgt_in`; with one, from where it stopped."""
        cache = RecurrentCache() if cache is None else cache
        if not cache.state:
            cache.state = self.decoder.initial_state(memory, memory_mask, rows=len(tgt_in))
        return self.decoder(self.tgt_embed(tgt_in), memory, memory_mask, cache)

    def new_cache(self, beams: int = 1) -> RecurrentCache:
        """An empty decoding state (any number of rows per source: `beams` changes nothing)."""
        return RecurrentCache()


def build_recurrent_seq2seq(
    cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, pad_idx: int
) -> RecurrentSeq2Seq:
    """The recurrent model `cfg` describes (arch rnn): it reads dim, rnn_dim, cell,
    encoder_layers, decoder_layers, dropout, attn_dropout, max_len and share_embeddings.

    Embeddings (and an untied output projection) are N(0, E^-1/2) and scaled by sqrt(E), as the
    Transformer's; the recurrent and linear layers keep torch's initialisation.
    """
    src_embed = TokenEmbedding(src_vocab_size, cfg.dim, padding_idx=pad_idx)
    tgt_embed = (
        src_embed if cfg.share_embeddings else TokenEmbedding(tgt_vocab_size, cfg.dim, padding_idx=pad_idx)
    )
    encoder = RecurrentEncoder(cfg.dim, cfg.rnn_dim, cfg.encoder_layers, cell=cfg.cell, dropout=cfg.dropout)
    decoder = AttentionDecoder(
        cfg.dim,
        cfg.rnn_dim,
        cfg.decoder_layers,
        cell=cfg.cell,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
    )
    output = output_projection(cfg.dim, tgt_vocab_size, tgt_embed if cfg.share_embeddings else None)
    return RecurrentSeq2Seq(
        src_embed,
        tgt_embed,
        encoder,
        decoder,
        output,
        pad_idx=pad_idx,
        max_len=cfg.max_len,
        dropout=cfg.dropout,
    )
