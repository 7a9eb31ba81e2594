"""Generation rows on a static KV cache: every step after the prefill has the same shapes.

`GenerationConfig(cache_implementation="static")` runs the prompts' forward as usual, then moves
the cache into fixed buffers (zoo.blocks.static_cache) and runs each one-token step with the same
shapes on the same addresses; with `compile=True` that step runs under torch.compile: on CUDA in
its "reduce-overhead" mode (CUDA graphs: the step's hundreds of kernels launched as one graph,
where a small model's decoding waits on the host launching them), on the CPU with the model's
weights frozen into the graph (`compiled_step`). Rows that end stay in the batch,
their further ids ignored, since leaving would change the shapes; positions past the context are
clamped for those rows only. Hugging Face's `cache_implementation="static"` with a compiled
forward is the same design.
"""

from __future__ import annotations

import contextlib
import itertools
import types
import weakref
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

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


# On the CPU inductor may fold the weights into the step's graph as constants (freezing) and then
# multiply by them with C++ GEMM kernels of its own, their weights packed at compile time and each
# chosen over aten's by timing it (max_autotune, the CPP backend). A one-row step of GPT micro ran
# 1.65x and of mini 1.27x the graph without (Zen 4, one thread, scratch runs; the benches:
# docs/gpt.md). dynamo reads `freezing` as it traces: `_tracing` sets these around the steps that
# may trace.
CPU_FROZEN = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN"}
# model -> (weights_key when its step was compiled, that step)
_cpu_steps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compiled_step(model: nn.Module, device: torch.device) -> Callable[..., Tensor]:
    """`static_step` under torch.compile: one graph (fullgraph) for every step of a batch shape
    (on the CPU one for one row and one for any two or more: `_tracing`); CUDA graphs on CUDA.
    On the CPU the graph computes with the weights it froze, so each model
    gets a step of its own, made anew once any of its tensors changed (`weights_key`): dynamo
    keeps the graphs of a copy of the step's code apart from every other copy's."""
    if device.type != "cpu":
        mode = "reduce-overhead" if device.type == "cuda" else None
        return torch.compile(static_step, fullgraph=True, dynamic=False, mode=mode)
    key = weights_key(model)
    held = _cpu_steps.get(model)
    if held is None or held[0] != key:
        own = types.FunctionType(
            static_step.__code__.replace(), static_step.__globals__, static_step.__name__
        )
        # dynamic=None so that the rows `_tracing` marks dynamic stay a symbol; it keeps every
        # other shape static.
        held = _cpu_steps[model] = (key, torch.compile(own, fullgraph=True, dynamic=None))
    return held[1]


def weights_key(model: nn.Module) -> tuple[tuple[int, int], ...]:
    """Where each parameter and buffer lies and how often it was changed in place (an optimizer's
    step and load_state_dict count; writes through `.data` do not, and a graph frozen before them
    keeps the old values)."""
    return tuple((t.data_ptr(), t._version) for t in itertools.chain(model.parameters(), model.buffers()))


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
        self.step = compiled_step(model, self.tokens.device) if compile else static_step
        self.compiled = compile
        self.frozen = compile and self.tokens.device.type == "cpu"
        self.guarded = False  # whether a compiled step has run with its guards checked

    def next_logits(self) -> Tensor:
        if not isinstance(self.cache, StaticCausalCache):  # the prefill, on the growing cache
            logits = super().next_logits()
            self.cache = StaticCausalCache.from_prefill(self.cache, self.real, self.length)
            if self.compiled and not self.frozen:  # CUDA graphs replay on fixed addresses
                for tensor in self.cache.tensors():
                    torch._dynamo.mark_static_address(tensor)
            return logits
        if not self.frozen:  # frozen weights are packed for inductor's own kernels
            self.one_row_layout()
        positions = (self.lengths - 1).clamp(max=self.model.max_len - 1)[:, None]
        # A copy with the standard strides: the view's grow with the ids, and torch.compile guards
        # on strides (`contiguous()` keeps a one-row view's, which is contiguous already).
        newest = self.tokens[:, -1:].clone(memory_format=torch.contiguous_format)
        # The first compiled step checks the guards and chooses its graph; the later ones pass the
        # same model, shapes and buffers, so only what tells the cached graphs apart is checked
        # again (checking them all took ~0.3 ms a step for the mini preset, on one CPU thread).
        if self.guarded:
            stance = torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
        elif self.frozen:  # a step that may trace
            stance = _tracing(newest, positions, self.cache)
        else:
            stance = contextlib.nullcontext()
        self.guarded = self.compiled
        with stance:
            return self.step(self.model, newest, positions, self.cache)

    def select(self, rows: Tensor) -> None:
        raise ValueError("a static cache keeps every row: its shapes never change")


@contextlib.contextmanager
def _tracing(ids: Tensor, positions: Tensor, cache: StaticCausalCache) -> Iterator[None]:
    """Around a frozen CPU step that may trace: inductor's settings (CPU_FROZEN), and from two rows
    on the rows traced as a symbol. With a symbolic row count freezing multiplies with inductor's
    C++ GEMM kernels and oneDNN's packed product instead of MKL's packed GEMM, whose few-row path
    is slow on AMD CPUs (GPT micro at 8 rows: ~90 us a product); micro's step at 8 rows ran 1.1x
    and mini's 1.18x faster (Zen 4, one thread), and one graph serves every batch of two or more
    rows. One row stays static, where the products are inductor's matrix-vector kernels."""
    if ids.shape[0] > 1:
        for tensor in (ids, positions, *cache.row_tensors()):
            torch._dynamo.mark_dynamic(tensor, 0)
    # capture_scalar_outputs: the cache's filled length (StaticCausalCache.show_next) is read
    # from its position tensor inside the graph, instead of breaking it.
    dynamo = {"automatic_dynamic_shapes": False, "capture_scalar_outputs": True}
    with torch._inductor.config.patch(CPU_FROZEN), torch._dynamo.config.patch(dynamo):
        yield
