"""The measurements behind the layer-type table: FLOPs, sequential operations, maximum path
length, wall time and memory of one mixer from `zoo.blocks.MIXERS`.

Every quantity is measured from the computation itself; `analytic_flops` exists only so that
tests and the report can check the counter against the formula.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from zoo.blocks.mixers import GATES, Recurrent, State, build_mixer, local_window

aten = torch.ops.aten
RECURRENT = ("rnn", "gru", "lstm")


# The counter calls these with the shapes of the op's tensor arguments.
def _attention_flops(q: Any, k: Any, v: Any, *args: Any, **kwargs: Any) -> int:
    return sdpa_flop_count(q, k, v)


def _attention_backward_flops(grad_out: Any, q: Any, k: Any, v: Any, *args: Any, **kwargs: Any) -> int:
    return sdpa_backward_flop_count(grad_out, q, k, v)


# torch's counter knows the CUDA attention kernels but not the CPU one that SDPA picks here;
# without these entries attention would count as its projections only.
CPU_ATTENTION_FLOPS = {
    aten._scaled_dot_product_flash_attention_for_cpu: _attention_flops,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _attention_backward_flops,
}


def traced(mixer: nn.Module) -> Callable[[Tensor], Tensor]:
    """The function whose executed ops are counted: recurrent layers run their explicit loop
    of cell steps, since torch's fused LSTM kernel is one opaque op (no FLOPs, no steps)."""
    return mixer.unrolled if isinstance(mixer, Recurrent) else mixer


def count_flops(fn: Callable[[Tensor], Tensor], x: Tensor) -> int:
    """FLOPs of fn(x) as torch.utils.flop_counter counts them: 2 per multiply-add of matmuls,
    convolutions and attention; elementwise ops are free."""
    with FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION_FLOPS) as counter:
        fn(x)
    return counter.get_total_flops()


def analytic_flops(name: str, *, batch: int, length: int, dim: int, causal: bool, kernel_size: int) -> int:
    """The forward FLOPs of MIXERS[name] written out (same convention as `count_flops`)."""
    tokens = batch * length
    if name == "attention":
        # Projections 4 T D^2 multiply-adds; scores and weighted values 2 T^2 D. The kernel is
        # counted as dense even when causal (it skips masked blocks; the counter does not know).
        return 2 * (4 * tokens * dim * dim) + 4 * batch * length * length * dim
    if name == "local_attention":
        window = local_window(kernel_size, causal=causal)
        chunk = max(1, min(window, length))
        padded = -(-length // chunk) * chunk
        keys = (2 if causal else 3) * chunk
        return 2 * (4 * tokens * dim * dim) + 4 * batch * padded * keys * dim
    if name in RECURRENT:
        hidden, directions = (dim, 1) if causal else (dim // 2, 2)
        return directions * 2 * tokens * GATES[name] * hidden * (dim + hidden)
    if name == "separable_conv":
        return 2 * tokens * dim * kernel_size + 2 * tokens * dim * dim
    if name in ("conv", "dilated_conv"):
        return 2 * tokens * dim * dim * kernel_size
    raise ValueError(f"no formula for {name!r}")


class _DependencyDepth(TorchDispatchMode):
    """Records, for every tensor an op produces, the longest chain of ops it depends on.

    Views and other aliasing ops pass their input's depth through (they compute nothing);
    every other op adds one step after the deepest of its tensor inputs.
    """

    def __init__(self) -> None:
        super().__init__()
        self._depth: dict[int, tuple[Tensor, int]] = {}  # the tensor is kept so ids stay unique
        self.max_depth = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, Tensor)]
        depth = max((self._depth.get(id(t), (t, 0))[1] for t in inputs), default=0)
        depth += 0 if func.is_view else 1
        for t in tree_leaves(out):
            if isinstance(t, Tensor):
                self._depth[id(t)] = (t, depth)
        self.max_depth = max(self.max_depth, depth)
        return out


def sequential_ops(fn: Callable[[Tensor], Tensor], x: Tensor) -> int:
    """The number of ops on the longest dependency chain of fn(x): operations that must run one
    after another however many processors there are."""
    tracker = _DependencyDepth()
    with torch.no_grad(), tracker:
        fn(x)
    return tracker.max_depth


def dependence(y: Tensor, x: Tensor) -> Tensor:
    """(T_out, T_in) bool: whether output position i has a nonzero gradient with respect to
    input position j, from one backward pass.

    x (T, T, D) holds T identical copies of one input and y = f(x) (T, T, D); copy b probes
    output position b (through a random projection, so that no contributions cancel exactly).
    This relies on f treating the batch rows independently, which every mixer does.
    """
    rows = torch.arange(y.shape[0])
    probe = torch.randn_like(y[:, 0])
    (grad,) = torch.autograd.grad((y[rows, rows] * probe).sum(), x, retain_graph=True)
    return grad.abs().sum(dim=-1) != 0


def _connected(dep: Tensor, *, causal: bool) -> bool:
    """Every output depends on every input it may see; raise if a causal layer sees the future."""
    allowed = torch.ones_like(dep).tril() if causal else torch.ones_like(dep)
    if (dep & ~allowed).any():
        raise AssertionError("a causal stack depends on future positions")
    return bool(dep[allowed].all())


def _shift(state: State, direction: int) -> State:
    """Each position takes its predecessor's state (in the direction of the recurrence)."""
    pad = (0, 0, 1, 0) if direction == 0 else (0, 0, 0, 1)
    return tuple(F.pad(s, pad)[:, :-1] if direction == 0 else F.pad(s, pad)[:, 1:] for s in state)


def relaxed_recurrence(layer: Recurrent, x: Tensor, steps: int) -> Tensor:
    """The recurrence after `steps` parallel sweeps (Jacobi iteration): each sweep updates every
    position from its predecessor's state of the previous sweep, so position t is exact once
    steps >= t. Sweep 0 is the cell on a zero state, position-wise, mixing nothing."""
    outputs = []
    for direction in range(layer.directions):
        gates = layer.input_gates(x, direction)
        state = layer.zero_state(gates)
        for _ in range(steps + 1):
            state = layer.cell(gates, _shift(state, direction), direction)
        outputs.append(state[0])
    return torch.cat(outputs, dim=-1)


def _mixing_steps(name: str, x: Tensor, *, causal: bool, kernel_size: int) -> Callable[[int], Tensor]:
    """steps -> the output of `steps` mixing steps of MIXERS[name] on x (float64 weights)."""
    dim = x.shape[-1]
    if name in RECURRENT:
        layer = build_mixer(name, dim, causal=causal).double()
        return lambda steps: relaxed_recurrence(layer, x, steps)
    stack: list[nn.Module] = []

    def run(steps: int) -> Tensor:
        while len(stack) < steps:  # layers are drawn once, so a deeper stack extends a shallower
            stack.append(
                build_mixer(name, dim, causal=causal, kernel_size=kernel_size, layer=len(stack)).double()
            )
        h = x
        for layer in stack[:steps]:
            h = layer(h)
        return h

    return run


def path_length(name: str, *, length: int, dim: int, causal: bool, kernel_size: int, seed: int = 0) -> int:
    """The smallest number of mixing steps after which every output position depends on every
    input position it may see, found by gradient reachability in float64.

    A step is one layer of a stack of fresh random layers (dilated convolutions with their
    dilation schedule, see `zoo.blocks.mixers.MixerFactory`), and for recurrent layers one sweep
    of `relaxed_recurrence`: one hop from a position to the next, which is what a recurrent
    layer chains n - 1 times. Every mixer keeps each position's dependence on itself, so
    connectivity only grows with the steps and doubling then bisection find the smallest.
    """
    torch.manual_seed(seed)
    x = torch.randn(1, length, dim, dtype=torch.float64).expand(length, -1, -1)
    x = x.clone().requires_grad_()
    run = _mixing_steps(name, x, causal=causal, kernel_size=kernel_size)

    def connected(steps: int) -> bool:
        return _connected(dependence(run(steps), x), causal=causal)

    low, high = 0, 1  # invariant: not connected after `low` steps (no mixing at all)
    while not connected(high):  # doubling, then bisection: few checks for short and long paths
        if high >= length:
            raise AssertionError(f"{name}: not connected after {high} steps")
        low, high = high, min(2 * high, length)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if connected(middle) else (middle, high)
    return high


def expected_path_length(name: str, *, length: int, causal: bool, kernel_size: int) -> int:
    """The formula for `path_length` (what the tests hold the measurement to)."""
    distance, k = length - 1, kernel_size
    if name == "attention":
        return 1
    if name in RECURRENT:
        return distance
    reach = local_window(k, causal=causal)  # conv and restricted attention reach the same
    if name == "dilated_conv":
        # Layer i reaches reach * (reach + 1)^i further: (reach + 1)^L - 1 after L layers.
        depth = 0
        while (reach + 1) ** depth - 1 < distance:
            depth += 1
        return depth
    return math.ceil(distance / reach)


class _LiveBytes(TorchDispatchMode):
    """Peak bytes of the tensors that ops allocate while it is active (above what was alive
    before). Storages are followed to their release with weakref finalizers."""

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = 0
        self._seen: set[int] = set()

    def _release(self, key: int, nbytes: int) -> None:
        self._seen.discard(key)
        self.live -= nbytes

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if not isinstance(t, Tensor):
                continue
            storage = t.untyped_storage()
            key = id(storage)
            if key in self._seen:
                continue
            self._seen.add(key)
            self.live += storage.nbytes()
            weakref.finalize(storage, self._release, key, storage.nbytes())
        self.peak = max(self.peak, self.live)
        return out


def forward_backward(mixer: nn.Module, x: Tensor) -> None:
    mixer.zero_grad(set_to_none=True)
    x.grad = None
    mixer(x).sum().backward()


def peak_memory(mixer: nn.Module, x: Tensor) -> int:
    """Peak bytes allocated by the ops of one forward + backward (activations, gradients)."""
    x = x.detach().requires_grad_()
    forward_backward(mixer, x)  # the first call may allocate caches; not part of the cost
    mixer.zero_grad(set_to_none=True)
    tracker = _LiveBytes()
    with tracker:
        forward_backward(mixer, x)
    return tracker.peak


def wall_time(mixer: nn.Module, x: Tensor, *, repeats: int) -> float:
    """Best-of-`repeats` seconds for one forward + backward (the minimum is the least disturbed
    by other processes sharing the CPU)."""
    x = x.detach().requires_grad_()
    forward_backward(mixer, x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward_backward(mixer, x)
        times.append(time.perf_counter() - start)
    return min(times)


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of log y against log x (least squares)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def crossover(xs: list[float], cheaper: list[float], dearer: list[float]) -> float | None:
    """The first x where `cheaper` stops being below `dearer`, interpolated on log-log axes
    between grid points; None if it stays below over the whole grid, xs[0] if never below."""
    gaps = np.log(np.asarray(cheaper, dtype=float)) - np.log(np.asarray(dearer, dtype=float))
    if gaps[0] >= 0:
        return float(xs[0])
    for i in range(1, len(xs)):
        if gaps[i] >= 0:
            frac = -gaps[i - 1] / (gaps[i] - gaps[i - 1])
            return float(np.exp(np.log(xs[i - 1]) + frac * (np.log(xs[i]) - np.log(xs[i - 1]))))
    return None
