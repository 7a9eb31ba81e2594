"""Sequence mixers with one interface, (B, T, D) -> (B, T, D): the layer types of the paper's
Table 1 (recurrent, convolutional, self-attention, restricted self-attention), so that
`bench.layers` can measure them side by side.

Causality is fixed at construction: a causal mixer's output at position t depends on inputs
0 .. t only. MIXERS maps a name to a constructor with one signature (see `MixerFactory`).

Shape key: B batch, T length, D model dim, H hidden width of one recurrent direction, G gates.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.blocks.attention import MultiHeadAttention
from zoo.blocks.local_attention import LocalAttention

State = tuple[Tensor, ...]  # (h,) for RNN and GRU, (h, c) for LSTM

RECURRENT_CELLS: dict[str, type[nn.RNNBase]] = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


class Recurrent(nn.Module):
    """An RNN, GRU or LSTM layer: unidirectional with H = D when causal, else bidirectional with
    H = D / 2 per direction (outputs concatenated).

    `forward` runs torch's fused kernel. `unrolled` computes the same function as an explicit
    loop of `cell` calls over time, so that tools that look at the executed ops (FLOP counters,
    dependency tracers) see every step; `cell` is the one-step update on torch's weight layout.

    Args:
        dim: model width D.
        cell: "rnn" (tanh), "gru" or "lstm".
        causal: unidirectional instead of bidirectional.
        bias: whether the cell has biases.
    """

    def __init__(self, dim: int, *, cell: str = "gru", causal: bool, bias: bool = True) -> None:
        super().__init__()
        if cell not in RECURRENT_CELLS:
            raise ValueError(f"unknown cell {cell!r}; choose from {sorted(RECURRENT_CELLS)}")
        if not causal and dim % 2:
            raise ValueError(f"a bidirectional layer splits dim in two; got odd dim {dim}")
        self.cell_type, self.causal = cell, causal
        self.hidden = dim if causal else dim // 2
        self.directions = 1 if causal else 2
        self.rnn = RECURRENT_CELLS[cell](
            dim, self.hidden, batch_first=True, bias=bias, bidirectional=not causal
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.rnn(x)[0]

    def _weights(self, direction: int, kind: str) -> tuple[Tensor, Tensor | None]:
        suffix = "_l0_reverse" if direction else "_l0"
        return (getattr(self.rnn, f"weight_{kind}{suffix}"), getattr(self.rnn, f"bias_{kind}{suffix}", None))

    def input_gates(self, x: Tensor, direction: int) -> Tensor:
        """x W_ih^T + b_ih for all positions at once: (B, T, D) -> (B, T, G H)."""
        return F.linear(x, *self._weights(direction, "ih"))

    def zero_state(self, like: Tensor) -> State:
        """All-zero state with the leading dims of `like` (..., G H)."""
        zeros = like.new_zeros(*like.shape[:-1], self.hidden)
        return (zeros, zeros) if self.cell_type == "lstm" else (zeros,)

    def cell(self, gates_x: Tensor, state: State, direction: int) -> State:
        """One step of the recurrence (torch's gate order), elementwise over leading dims.

        Args:
            gates_x: (..., G H) input gates from `input_gates`.
            state: the previous state, each (..., H).
        """
        gates_h = F.linear(state[0], *self._weights(direction, "hh"))
        if self.cell_type == "rnn":
            return (torch.tanh(gates_x + gates_h),)
        if self.cell_type == "gru":
            xr, xz, xn = gates_x.chunk(3, dim=-1)
            hr, hz, hn = gates_h.chunk(3, dim=-1)
            reset, update = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            candidate = torch.tanh(xn + reset * hn)
            return (candidate + update * (state[0] - candidate),)
        i, f, g, o = (gates_x + gates_h).chunk(4, dim=-1)
        c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def unrolled(self, x: Tensor) -> Tensor:
        """`forward` as an explicit loop over time steps: (B, T, D) -> (B, T, D)."""
        outputs = []
        for direction in range(self.directions):
            gates = self.input_gates(x, direction)
            state = self.zero_state(gates[:, 0])
            steps = range(x.shape[1] - 1, -1, -1) if direction else range(x.shape[1])
            hidden = []
            for t in steps:
                state = self.cell(gates[:, t], state, direction)
                hidden.append(state[0])
            outputs.append(torch.stack(hidden[::-1] if direction else hidden, dim=1))
        return torch.cat(outputs, dim=-1)


class Conv(nn.Module):
    """A 1-D convolution over time, D channels in and out.

    'same' padding (odd kernel, centred) or causal padding (all on the left), so T is kept.
    Separable: a depthwise convolution (one kernel per channel) followed by a pointwise D x D
    projection, O(k T D + T D^2) instead of O(k T D^2) (the paper's separable convolutions).

    Args:
        dim: model width D.
        kernel_size: k, the number of taps.
        causal: pad on the left only, so position t sees t - (k - 1) dilation .. t.
        dilation: spacing between taps.
        separable: depthwise-separable instead of a full convolution.
        bias: whether the convolutions have biases.
    """

    def __init__(
        self,
        dim: int,
        *,
        kernel_size: int,
        causal: bool,
        dilation: int = 1,
        separable: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not causal and kernel_size % 2 == 0:
            raise ValueError(f"'same' padding needs an odd kernel_size, got {kernel_size}")
        reach = (kernel_size - 1) * dilation
        self.padding = (reach, 0) if causal else (reach // 2, reach // 2)
        self.conv = nn.Conv1d(
            dim, dim, kernel_size, dilation=dilation, bias=bias, groups=dim if separable else 1
        )
        self.pointwise = nn.Conv1d(dim, dim, 1, bias=bias) if separable else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        y = self.pointwise(self.conv(F.pad(x.transpose(1, 2), self.padding)))
        return y.transpose(1, 2)


class SelfAttentionMixer(nn.Module):
    """Self-attention (full or restricted) as a mixer: `forward(x)` with causality fixed here.

    Args:
        attn: a MultiHeadAttention or LocalAttention.
        causal: hide the future (SDPA's causal path for full attention).
    """

    def __init__(self, attn: MultiHeadAttention, *, causal: bool) -> None:
        super().__init__()
        self.attn, self.causal = attn, causal

    def forward(self, x: Tensor) -> Tensor:
        return self.attn(x, is_causal=self.causal)


class MixerFactory(Protocol):
    def __call__(
        self, dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
    ) -> nn.Module:
        """Build one mixer.

        Args:
            dim: model width D.
            causal: output t depends on inputs 0 .. t only.
            kernel_size: the neighbourhood size k of convolutions and restricted attention
                (restricted attention gets the same reach: half-width (k - 1) / 2, causal k - 1).
            num_heads: attention heads (ignored by the other mixers).
            layer: index in a stack; dilated convolutions use dilation (w + 1) ** layer, where
                w is the one-sided reach of the kernel (k - 1 causal, (k - 1) / 2 'same'): the
                receptive field grows by a factor w + 1 per layer, and every offset inside it
                is reached by taps that all point the same way, so no path leaves the sequence
                (with 'same' padding and dilation k ** layer some would, and be cut).
        """


def local_window(kernel_size: int, *, causal: bool) -> int:
    """Half-width of restricted attention whose neighbourhood matches a kernel of k taps."""
    return kernel_size - 1 if causal else (kernel_size - 1) // 2


def _attention(
    dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
) -> nn.Module:
    return SelfAttentionMixer(MultiHeadAttention(dim, num_heads), causal=causal)


def _local_attention(
    dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
) -> nn.Module:
    attn = LocalAttention(dim, num_heads, window=local_window(kernel_size, causal=causal))
    return SelfAttentionMixer(attn, causal=causal)


def _recurrent(cell: str) -> MixerFactory:
    def build(
        dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
    ) -> nn.Module:
        return Recurrent(dim, cell=cell, causal=causal)

    return build


def _conv(*, dilated: bool, separable: bool) -> MixerFactory:
    def build(
        dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
    ) -> nn.Module:
        return Conv(
            dim,
            kernel_size=kernel_size,
            causal=causal,
            separable=separable,
            dilation=(local_window(kernel_size, causal=causal) + 1) ** layer if dilated else 1,
        )

    return build


MIXERS: dict[str, MixerFactory] = {
    "attention": _attention,
    "local_attention": _local_attention,
    "rnn": _recurrent("rnn"),
    "gru": _recurrent("gru"),
    "lstm": _recurrent("lstm"),
    "conv": _conv(dilated=False, separable=False),
    "dilated_conv": _conv(dilated=True, separable=False),
    "separable_conv": _conv(dilated=False, separable=True),
}


def build_mixer(
    name: str, dim: int, *, causal: bool, kernel_size: int = 3, num_heads: int = 1, layer: int = 0
) -> nn.Module:
    """MIXERS[name](...) with a clear error for an unknown name."""
    if name not in MIXERS:
        raise ValueError(f"unknown mixer {name!r}; choose from {sorted(MIXERS)}")
    return MIXERS[name](dim, causal=causal, kernel_size=kernel_size, num_heads=num_heads, layer=layer)
