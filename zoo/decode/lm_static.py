"""Generation rows on a static KV cache: every step after the prefill has the same shapes.

`GenerationConfig(cache_implementation="static")` runs the prompts' forward as usual, then moves
the cache into fixed buffers (zoo.blocks.static_cache) and runs each one-token step with the same
shapes on the same addresses; with `compile=True` that step runs under torch.compile, on CUDA in
its "reduce-overhead" mode (CUDA graphs: the step's hundreds of kernels launched as one graph,
where a small model's decoding waits on the host launching them). Rows that end stay in the batch,
their further ids ignored, since leaving would change the shapes; positions past the context are
clamped for those rows only. Hugging Face's `cache_implementation="static"` with a compiled
forward is the same design.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import Tensor

from zoo.blocks.static_cache import StaticCausalCache
from zoo.decode.lm_state import CausalLM, LMState


def static_step(model: CausalLM, ids: Tensor, positions: Tensor, cache: StaticCausalCache) -> Tensor:
    """One step: ids (N, 1) at positions (N, 1) -> (N, V) float32 logits; the cache written and
    advanced."""
    cache.show_next()
    hidden = model.hidden(ids, cache=cache, positions=positions)
    logits = model.logits(hidden[:, -1]).float()
    cache.advance()
    return logits


def compiled_step(device: torch.device) -> Callable[..., Tensor]:
    """`static_step` under torch.compile: one graph (fullgraph) for every step of a batch shape;
    CUDA graphs on CUDA."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(static_step, fullgraph=True, dynamic=False, mode=mode)


class StaticLMState(LMState):
    """LMState whose steps after the prefill run on a StaticCausalCache of `length` positions
    (at least the padded prompt width plus the most new ids of any row).

    Args:
        compile: run the steps under torch.compile (`compiled_step`).
    """

    keeps_rows = True

    def __init__(
        self, model: CausalLM, prompts: list[list[int]], *, pad_id: int, length: int, compile: bool = False
    ) -> None:
        super().__init__(model, prompts, pad_id=pad_id, use_cache=True)
        self.length = length
        self.step = compiled_step(self.tokens.device) if compile else static_step
        self.compiled = compile
        self.guarded = False  # whether a compiled step has run with its guards checked

    def next_logits(self) -> Tensor:
        if not isinstance(self.cache, StaticCausalCache):  # the prefill, on the growing cache
            logits = super().next_logits()
            self.cache = StaticCausalCache.from_prefill(self.cache, self.real, self.length)
            if self.compiled:
                for tensor in self.cache.tensors():
                    torch._dynamo.mark_static_address(tensor)
            return logits
        self.one_row_layout()
        positions = (self.lengths - 1).clamp(max=self.model.max_len - 1)[:, None]
        # A copy with the standard strides: the view's grow with the ids, and torch.compile guards
        # on strides (`contiguous()` keeps a one-row view's, which is contiguous already).
        newest = self.tokens[:, -1:].clone(memory_format=torch.contiguous_format)
        # The first compiled step checks the guards and chooses its graph; the later ones pass the
        # same model, shapes and buffers, so only what tells the cached graphs apart is checked
        # again (checking them all took ~0.3 ms a step for the mini preset, on one CPU thread).
        stance = (
            torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
            if self.guarded
            else contextlib.nullcontext()
        )
        self.guarded = self.compiled
        with stance:
            return self.step(self.model, newest, positions, self.cache)

    def select(self, rows: Tensor) -> None:
        raise ValueError("a static cache keeps every row: its shapes never change")
