"""What every zoo encoder-decoder answers the same way, whatever its layers: next-token logits for
the decoders in zoo.decode (`decode`) and the teacher-forced training call with the fused loss
(`forward`). A model brings its own `encode`, `decoder_states` and `new_cache`; the
Transformer (zoo.models.encoder_decoder) and the recurrent baseline
(zoo.models.recurrent_seq2seq) share these two.

Shape key: B batch, S source length, T target length, D the decoder's output width, V target
vocabulary size.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from zoo.blocks.linear import Linear
from zoo.blocks.output_loss import LossSums, linear_cross_entropy


class Seq2Seq(nn.Module):
    """Base of the encoder-decoders: it holds the parts (`output` is the D -> V projection, no
    bias), and a subclass defines

    - encode(src (B, S), source=None) -> memory (B, S, D'), memory_mask (B, 1, 1, S) bool;
    - decoder_states(tgt_in (N, T), memory, memory_mask, cache=None) -> (N, T, D), before the
      projection; with a cache only the new tokens, `memory` needed on the first call only;
    - new_cache(beams=1) -> a cache with `reorder` and `select_sources` (zoo.decode.protocol).
    """

    def __init__(
        self,
        src_embed: nn.Module,
        tgt_embed: nn.Module,
        encoder: nn.Module,
        decoder: nn.Module,
        output: nn.Linear,
        *,
        pad_idx: int,
        max_len: int,
    ) -> None:
        super().__init__()
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.encoder, self.decoder = encoder, decoder
        self.output = output
        self.pad_idx, self.max_len = pad_idx, max_len

    def decode(self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: Any = None) -> Tensor:
        """tgt_in (B, T) -> logits (B, T, V).

        With a cache, `tgt_in` holds only the new tokens, and `memory` is needed only on the first
        call, which fills the cache's per-source part (the cross-attention keys and values).
        """
        return self.output(self.decoder_states(tgt_in, memory, memory_mask, cache))

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        targets: Tensor | None = None,
        *,
        smoothing: float = 0.0,
        source: Any = None,
    ) -> Tensor | LossSums:
        """Teacher-forced logits (B, T, V) of the next target tokens; or, given `targets` (B, T)
        (padding = the model's pad id), the sums of their label-smoothed loss, NLL and count,
        with the projection and the loss fused so that no (B, T, V) tensor is ever made (as
        nanoGPT's forward takes targets; it is here, not in the task, so DDP and torch.compile
        wrap it). `source` goes to `encode` (what a custom source embedding reads)."""
        memory, memory_mask = self.encode(src, source)
        if targets is None:
            return self.decode(tgt_in, memory, memory_mask)
        states = self.decoder_states(tgt_in, memory, memory_mask)
        return linear_cross_entropy(
            states, self.output.weight, targets, smoothing=smoothing, ignore_index=self.pad_idx
        )


def output_projection(dim: int, vocab_size: int, tied_to: nn.Embedding | None) -> nn.Linear:
    """The pre-softmax projection D -> V without bias: sharing the embeddings' weight (the
    paper's tying), or its own, N(0, D^-1/2) as the embeddings are."""
    output = Linear(dim, vocab_size, bias=False)
    if tied_to is not None:
        output.weight = tied_to.weight
    else:
        nn.init.normal_(output.weight, mean=0.0, std=dim**-0.5)
    return output
