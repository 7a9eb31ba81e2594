"""The modules zoo.convert.onnx exports: zoo's models behind the plain-tensor signatures an ONNX
graph has (no cache objects, no optional arguments).

Each wraps a model and calls its own methods, so the graph computes what zoo computes; only the
caches are the graph-shaped ones of zoo.convert.onnx.cache.

Shape key: B batch, S source length, T tokens, P past positions, D model dim, V vocabulary,
H heads, Dk / Dh key / value head widths.
"""

from __future__ import annotations

from torch import Tensor, nn

from zoo.convert.onnx.cache import KeysValues, StepCache, StepCausalCache
from zoo.models.bert import Bert
from zoo.models.encoder_decoder import Transformer
from zoo.models.gpt import GPT


class TranslationEncoder(nn.Module):
    """src (B, S) -> memory (B, S, D), memory_mask (B, S) bool (True at real tokens), and per
    decoder layer the cross-attention keys (B, H, S, Dk) and values (B, H, S, Dh): computed once
    per sentence here, read by every decoder step."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor, list[tuple[Tensor, Tensor]]]:
        memory, memory_mask = self.model.encode(src)
        cross = [layer.cross_attn.context_kv(memory) for layer in self.model.decoder.layers]
        return memory, memory_mask[:, 0, 0], cross


class TranslationStep(nn.Module):
    """One decoding step: the newest token of each row (B, 1), the encoder's memory_mask and
    cross-attention keys/values, and per layer the past self-attention keys/values (B, H, P, ..)
    -> the next token's logits (B, V) and the present keys/values (B, H, P + 1, ..)."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, tokens: Tensor, memory_mask: Tensor, cross: KeysValues, past: KeysValues
    ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        cache = StepCache.of(past, cross)
        logits = self.model.decode(tokens, None, memory_mask[:, None, None, :], cache)
        return logits[:, -1], cache.present()


class GPTStep(nn.Module):
    """ids (B, T) after P cached positions, and per layer the past keys/values (B, H, P, Dh) ->
    next-token logits (B, T, V) and the present keys/values (B, H, P + T, Dh). P = 0 is the
    prompt's forward."""

    def __init__(self, model: GPT) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: Tensor, past: KeysValues) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        cache = StepCausalCache.of(past)
        return self.model(ids, cache=cache), cache.present()


class BertFeatures(nn.Module):
    """A pretrained BERT's encoder: input_ids, token_type_ids (B, T) and attention_mask (B, T)
    bool -> hidden states (B, T, D) and the pooled [CLS] state (B, D)."""

    def __init__(self, model: Bert) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor, attention_mask: Tensor
    ) -> tuple[Tensor, Tensor]:
        hidden = self.model.encode(input_ids, token_type_ids, attention_mask)
        return hidden, self.model.pool(hidden)
