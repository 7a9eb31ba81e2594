"""Generation rows on a static KV cache: every step after the prefill has the same shapes.

`GenerationConfig(cache_implementation="static")` runs the prompts' forward as usual, then moves
the cache into fixed buffers (zoo.blocks.static_cache) and runs each one-token step with the same
shapes on the same addresses; with `compile=True` that step runs under torch.compile: on CUDA in
its "reduce-overhead" mode (CUDA graphs: the step's hundreds of kernels launched as one graph,
where a small model's decoding waits on the host launching them), on the CPU with the model's
weights frozen into the graph (`compiled_step`). Rows that end stay in the batch,
their further ids ignored, since leaving would change the shapes; positions past the context are
clamped for those rows only. Hugging Face's `cache_implementation="static"` with a compiled
forward is the same design. Greedy search may run several steps a call (`greedy_steps`, choosing
each step's id inside the call), which pays the call's fixed costs once for all of them.
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
from zoo.decode.lm_config import GenerationConfig
from zoo.decode.lm_state import CausalLM, LMState


def static_step(model: CausalLM, ids: Tensor, positions: Tensor, cache: StaticCausalCache) -> Tensor:
    """One step: ids (N, 1) at positions (N, 1) -> (N, V) float32 logits; the cache written and
    advanced."""
    cache.show_next()
    hidden = model.hidden(ids, cache=cache, positions=positions)
    logits = model.logits(hidden[:, -1]).float()
    cache.advance()
    return logits


def greedy_steps(
    model: CausalLM, ids: Tensor, positions: Tensor, cache: StaticCausalCache, biases: Tensor
) -> Tensor:
    """K = len(biases) greedy steps in one call: ids (N, 1) at positions (N, 1) -> each step's
    ids (N, K), the argmax of its logits plus its row of `biases` (K, V:
    zoo.decode.logits_processors.greedy_biases); the cache advanced K positions, each row's
    position clamped to the context as StaticLMState clamps it."""
    chosen = []
    for bias in biases.unbind(0):
        logits = static_step(model, ids, positions, cache)
        ids = (logits + bias).argmax(dim=-1, keepdim=True)
        chosen.append(ids)
        positions = (positions + 1).clamp(max=model.max_len - 1)
    return torch.cat(chosen, dim=1)


# Steps a compiled CPU call runs where its products are all int8 (`steps_per_call`). Each call
# pays dynamo's guard lookup and wrappers, and each step outside one the generation loop's eager
# work (processing, argmax, appending, stopping): with 4 steps a call GPT mini int8 ran 0.90x the
# time at one row and 0.91x at 8 rows, one thread, the same ids (Zen 4, one model alternated
# with 1 step a call; bench/results/int8.md). 4 because compiling grows with the steps: 6 -> 14 s
# at one row and 12 -> 28 s at 8 rows with 4; a scratch version with 8 took 139 s at 8 rows and
# gained no more at one row.
# Float weights are another matter: freezing packs a weight for inductor's own product kernels
# once per product in the graph, so a call of K steps holds K packed copies of each, and beyond
# the smallest models reading them costs more than the call saves (scratch runs: GPT mini, one
# row, 2 steps a call took 1.16x the time of one; GPT micro 0.79x with 2, 1.2x with 8). int8
# products (zoo.quantize, `torch._int_mm`) read the one int8 weight in place in every step.
INT8_STEPS_PER_CALL = 4


def steps_per_call(model: nn.Module, config: GenerationConfig, device: torch.device) -> int:
    """`config.steps_per_call`, or where it is 0 INT8_STEPS_PER_CALL for a compiled CPU step of
    greedy search that multiplies no float weight, else 1."""
    if config.steps_per_call:
        return config.steps_per_call
    unrolled = config.compile and device.type == "cpu" and config.greedy_biases_only()
    return INT8_STEPS_PER_CALL if unrolled and not multiplies_float_weights(model) else 1


def multiplies_float_weights(model: nn.Module) -> bool:
    """Whether the model's output projection or any of its linear layers multiplies float weights
    (GPT's `output_product_weight` is None once zoo.quantize gave it an int8 copy). The output is
    asked first: a float model answers without a walk over its modules (zoo.blocks.linear's
    walk for both kinds of product weight took 0.2 ms on GPT micro, once a generation call)."""
    if getattr(model, "output_product_weight", model.output_weight) is not None:
        return True
    return any(isinstance(module, nn.Linear) for module in model.modules())


# On the CPU inductor may fold the weights into the step's graph as constants (freezing) and then
# multiply by them with C++ GEMM kernels of its own, their weights packed at compile time and each
# chosen over aten's by timing it (max_autotune, the CPP backend). A one-row step of GPT micro ran
# 1.65x and of mini 1.27x the graph without (Zen 4, one thread, scratch runs; the benches:
# docs/gpt.md). dynamo reads `freezing` as it traces: `_tracing` sets these around the steps that
# may trace.
CPU_FROZEN = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN"}
# model -> {step function's name: (weights_key when it was compiled, the compiled step)}
_cpu_steps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compiled_step(
    model: nn.Module, device: torch.device, step: Callable[..., Tensor] = static_step
) -> Callable[..., Tensor]:
    """`step` (static_step or greedy_steps) under torch.compile: one graph (fullgraph) for every
    call of a batch shape (on the CPU one for one row and one for any two or more: `_tracing`);
    CUDA graphs on CUDA. On the CPU the graph computes with the weights it froze, so each model
    gets steps of its own, made anew once any of its tensors changed (`weights_key`): dynamo
    keeps the graphs of a copy of a function's code apart from every other copy's."""
    if device.type != "cpu":
        mode = "reduce-overhead" if device.type == "cuda" else None
        return torch.compile(step, fullgraph=True, dynamic=False, mode=mode)
    key = weights_key(model)
    steps = _cpu_steps.setdefault(model, {})
    held = steps.get(step.__name__)
    if held is None or held[0] != key:
        own = types.FunctionType(step.__code__.replace(), step.__globals__, step.__name__)
        # dynamic=None so that the rows `_tracing` marks dynamic stay a symbol; it keeps every
        # other shape static.
        held = steps[step.__name__] = (key, torch.compile(own, fullgraph=True, dynamic=None))
    return held[1]


def weights_key(model: nn.Module) -> tuple[tuple[int, int], ...]:
    """Where each parameter and buffer lies and how often it was changed in place (an optimizer's
    step and load_state_dict count; writes through `.data` do not, and a graph frozen before them
    keeps the old values)."""
    return tuple((t.data_ptr(), t._version) for t in itertools.chain(model.parameters(), model.buffers()))


class StaticLMState(LMState):
    """LMState whose steps after the prefill run on a StaticCausalCache of `length` positions
    (at least the padded prompt width plus the most new ids of any row, plus steps_per_call - 1:
    a call's last steps may run past a row's end, their ids ignored).

    Args:
        compile: run the steps under torch.compile (`compiled_step`).
        steps_per_call: steps a call after the prefill (more than 1: greedy search only, its ids
            from `next_greedy_ids`, `greedy_steps`).
    """

    keeps_rows = True

    def __init__(
        self,
        model: CausalLM,
        prompts: list[list[int]],
        *,
        pad_id: int,
        length: int,
        compile: bool = False,
        steps_per_call: int = 1,
    ) -> None:
        super().__init__(model, prompts, pad_id=pad_id, use_cache=True)
        self.length, self.steps_per_call = length, steps_per_call
        step = greedy_steps if steps_per_call > 1 else static_step
        self.step = compiled_step(model, self.tokens.device, step) if compile else step
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
        return self._call()

    def next_greedy_ids(self, biases: Tensor) -> Tensor:
        """(N, K) every row's next K = steps_per_call ids, after the prefill (`greedy_steps`;
        biases (K, V) from zoo.decode.logits_processors.greedy_biases)."""
        return self._call(biases)

    def _call(self, *biases: Tensor) -> Tensor:
        """The step after the newest ids: static_step, or greedy_steps given the biases."""
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
            return self.step(self.model, newest, positions, self.cache, *biases)

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
