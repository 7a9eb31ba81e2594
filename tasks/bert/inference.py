"""What a trained BERT is asked outside training: the fillers of [MASK] (as the transformers
`fill-mask` pipeline gives them) and the self-attention of every layer and head on a sentence or
a pair. `loaded` is anything with a `model` (zoo.models.bert.Bert) and its `tokenizer`: the
spec's loaded run or a zoo.convert.hf_bert.LoadedBert."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from zoo.blocks import attention_maps
from zoo.config import UserError


@torch.no_grad()
def fill_mask(loaded: Any, text: str, top_k: int = 5) -> list[list[dict]]:
    """Per [MASK] of `text`, its `top_k` fillers: {score, token, token_str, sequence}, where
    sequence is the text with that [MASK] filled. As in the transformers `fill-mask` pipeline, a
    line with one [MASK] decodes without special tokens; a line with several keeps them all, so
    the other [MASK]s stay visible (and so do [CLS] and [SEP], as the pipeline prints them)."""
    tokenizer, model = loaded.tokenizer, loaded.model
    ids = [tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]
    if len(ids) > model.max_len:
        raise UserError(f"line of {len(ids)} tokens exceeds the model's {model.max_len}: {text[:60]!r}")
    input_ids = torch.tensor([ids], device=next(model.parameters()).device)
    masked = input_ids == tokenizer.mask_id
    if not masked.any():
        raise UserError(f"no [MASK] in {text[:60]!r}")
    probabilities = model(input_ids, masked_positions=masked).mlm.float().softmax(dim=-1)
    # WordPieceTokenizer.decode skips special tokens; its tokenizers pipeline can keep them.
    keep_specials = int(masked.sum()) > 1
    results = []
    for position, probs in zip(masked[0].nonzero()[:, 0].tolist(), probabilities):
        scores, tokens = probs.topk(min(top_k, len(probs)))
        fillers = []
        for score, token in zip(scores.tolist(), tokens.tolist()):
            filled = list(ids)
            filled[position] = token
            fillers.append(
                {
                    "score": score,
                    "token": token,
                    "token_str": tokenizer.convert_ids_to_tokens([token])[0],
                    "sequence": tokenizer.tokenizer.decode(filled, skip_special_tokens=not keep_specials),
                }
            )
        results.append(fillers)
    return results


def format_fillers(text: str, results: list[list[dict]]) -> str:
    """The line, then per [MASK] its fillers, one per line: score, token, filled sequence."""
    lines = [text]
    for number, fillers in enumerate(results, 1):
        if len(results) > 1:
            lines.append(f"  [MASK] {number}:")
        lines.extend(f"  {f['score']:.4f}  {f['token_str']:<15} {f['sequence']}" for f in fillers)
    return "\n".join(lines)


def pair_inputs(loaded: Any, text: str, text_b: str = "") -> tuple[Tensor, Tensor, list[str]]:
    """ids (1, T), token types (1, T) and the tokens of [CLS] A [SEP] (B [SEP])."""
    tok = loaded.tokenizer
    a = [tok.cls_id, *tok.encode(text), tok.sep_id]
    b = [*tok.encode(text_b), tok.sep_id] if text_b else []
    if len(a) + len(b) > loaded.model.max_len:
        raise UserError(f"{len(a) + len(b)} tokens exceed the model's {loaded.model.max_len}")
    ids = torch.tensor([a + b])
    types = torch.tensor([[0] * len(a) + [1] * len(b)])
    return ids, types, tok.convert_ids_to_tokens(a + b)


@torch.no_grad()
def attention_weights(loaded: Any, ids: Tensor, types: Tensor) -> Tensor:
    """(layers, heads, T, T) attention weights of one sequence, on the CPU in float32."""
    model = loaded.model.eval()
    device = next(model.parameters()).device
    with attention_maps(model.encoder) as maps:
        model(ids.to(device), types.to(device))
    layers = range(len(model.encoder.layers))
    return torch.stack([maps[f"layers.{i}.self_attn"][0][0].float().cpu() for i in layers])
