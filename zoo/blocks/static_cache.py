"""A KV cache of fixed shapes (StaticCausalCache), for a decoder-only model's one-token steps.

zoo.blocks.kv_cache grows its buffers and slices them to the filled length, so every decoding
step has new shapes and Python-int state: each would be a new graph for torch.compile and a new
recording for CUDA graphs. Here the buffers are allocated once at a fixed length (the caller's:
zoo.decode.lm_generate.static_length fits it to the batch), the step writes its keys and values at a
position held in a tensor, and the positions not yet written (and left padding) are hidden by a
boolean mask that the step also updates: every step then runs the same graph on the same
addresses, Hugging Face's `StaticCache` idea. On a GPU the cost is attention over the whole
buffer at every step, masked, instead of over the filled part. On the CPU attention reads only
the columns written so far (`filled`, read from the position tensor: under torch.compile a
symbol whose value the graph reads at run time, so one graph still serves every step).

The prompts' forward (prefill) runs on the ordinary cache; `from_prefill` copies its keys and
values into the fixed buffers.

Shape key: B rows, H heads, S buffer positions, P prompt positions, Dh head dim.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.blocks.cache import CausalCache


class StaticKVCache:
    """One attention module's keys and values (B, H, S, Dh), written at `position`.

    Args:
        keys, values: the buffers. position: (1,) long, the next write's column, shared by every
            layer. visible: (B, 1, 1, S) bool, True at keys that may be attended to, shared too.
    """

    cross = False
    is_empty = False

    def __init__(self, keys: Tensor, values: Tensor, position: Tensor, visible: Tensor) -> None:
        self.keys, self.values, self.position, self.visible = keys, values, position, visible
        self.filled: int | torch.SymInt | None = None  # columns attention reads (None: all)

    def __len__(self) -> int:
        return self.keys.shape[2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write one step's (B, H, 1, Dh) keys/values at the position and return the whole
        buffers (the position is made visible once per step, by StaticCausalCache.show_next)."""
        self.keys.index_copy_(2, self.position, k)
        self.values.index_copy_(2, self.position, v)
        return self.keys[:, :, : self.filled], self.values[:, :, : self.filled]

    @property
    def mask(self) -> Tensor:
        return self.visible[..., : self.filled]


class StaticCausalCache:
    """Per-layer StaticKVCaches over shared `position` and `visible` tensors.

    `offset` is the buffer length: the keys every step attends over (masked), which tells the
    causal stack that a one-token step needs no causal mask of its own.
    """

    def __init__(self, layers: list[StaticKVCache], position: Tensor, visible: Tensor) -> None:
        self.layers, self.position, self.visible = layers, position, visible

    @classmethod
    def from_prefill(cls, cache: CausalCache, real: Tensor, length: int) -> StaticCausalCache:
        """Buffers of `length` positions holding the prefilled `cache`'s P positions; `real`
        (B, P) bool marks the prompts' real tokens (False at left padding)."""
        filled = cache.offset
        if length < filled:
            raise ValueError(f"a static cache of {length} positions cannot hold the {filled} prefilled")
        position = torch.full((1,), filled, dtype=torch.long, device=real.device)
        visible = real.new_zeros(real.shape[0], 1, 1, length)
        visible[:, 0, 0, :filled] = real
        layers = []
        for layer in cache.layers:
            k, v = layer.keys, layer.values
            keys = k.new_zeros(*k.shape[:2], length, k.shape[3])
            values = v.new_zeros(*v.shape[:2], length, v.shape[3])
            keys[:, :, :filled], values[:, :, :filled] = k, v
            layers.append(StaticKVCache(keys, values, position, visible))
        return cls(layers, position, visible)

    @property
    def offset(self) -> int:
        return len(self.layers[0])

    def tensors(self) -> list[Tensor]:
        """Every buffer the steps write: what CUDA graphs must find at fixed addresses."""
        return [self.position, *self.row_tensors()]

    def row_tensors(self) -> list[Tensor]:
        """The buffers whose first dimension is the batch's rows."""
        return [self.visible] + [t for layer in self.layers for t in (layer.keys, layer.values)]

    def show_next(self) -> None:
        """Make the position about to be written visible to every layer (the new token attends to
        itself): once a step, not once a layer. On the CPU the layers then attend over the
        columns up to it only: a step of GPT mini at 8 rows with 64 prompt and 128 new ids ran
        8-18% faster than over the whole 256-column buffer (Zen 4; scratch runs, alternated).
        Reading the position costs a GPU a synchronisation, and CUDA graphs cannot hold it."""
        self.visible.index_fill_(3, self.position, True)
        if self.position.device.type != "cpu":
            return
        # Under torch.compile an unbacked symbol (dynamo's capture_scalar_outputs, which the
        # caller sets); the checks tell the graph it is a valid length of the buffers.
        filled = self.position.item() + 1
        torch._check(filled >= 1)
        torch._check(filled <= self.visible.shape[3])
        for layer in self.layers:
            layer.filled = filled

    def advance(self) -> None:
        """Move the write position to the next column, after a step."""
        self.position.add_(1)
