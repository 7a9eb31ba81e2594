"""The exported translation graphs under ONNX Runtime, behind zoo.decode's EncoderDecoder
protocol: zoo's own greedy search and sampling run them unchanged (the same rules: length limits,
forced EOS, no padding or BOS generated; finished rows leave the batch), so the ids they give can
be compared with the PyTorch model's token for token.

    model = OnnxSeq2Seq.load("exported/", threads=1)
    ids = greedy_search(model, src, special=SPECIAL_IDS).best()

Arrays cross between torch and ONNX Runtime without copies (torch.from_numpy, Tensor.numpy).

Shape key: B rows (one per source sentence), S source length, H heads, P past positions,
Dk / Dh key / value head widths, V vocabulary size.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from zoo.config import UserError
from zoo.convert.onnx.export import CONFIG, DECODER_STEP, ENCODER, layer_names


def session(path: Path, *, threads: int = 0):
    """An ONNX Runtime CPU session of the graph at `path`, on `threads` threads (0: its default)."""
    try:
        import onnxruntime
    except ImportError:
        raise UserError('running ONNX graphs needs onnxruntime: pip install "zoo[onnx]"') from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxCache:
    """The state ONNX Runtime's decoder step needs between calls: per layer the cross-attention
    keys/values (one entry per source) and the self-attention past (one per row), as arrays."""

    def __init__(self) -> None:
        self.cross: list[np.ndarray] = []
        self.past: list[np.ndarray] = []

    def fill(self, cross: list[np.ndarray]) -> None:
        """The encoder's keys/values (B, H, S, ..), and an empty past (B, H, 0, ..) to match."""
        self.cross, self.past = cross, [kv[:, :, :0] for kv in cross]

    def reorder(self, index: Tensor) -> None:
        self.past = [kv[index.numpy()] for kv in self.past]

    def select_sources(self, index: Tensor) -> None:
        self.cross = [kv[index.numpy()] for kv in self.cross]


class OnnxSeq2Seq:
    """An exported translation model (zoo.convert.onnx.export_translation) as an encoder-decoder
    for zoo.decode's greedy search and sampling: one row per source sentence (no beams).

    `encode` returns, in the memory's place, the cross-attention keys/values that the encoder
    graph computed: the first `decode` call stores them in the cache, as zoo's own model stores
    the ones it computes from the memory.

    Args:
        encoder, step: ONNX Runtime sessions of encoder.onnx and decoder_step.onnx.
        max_len: the model's position table length (decoding stops before it).
    """

    def __init__(self, encoder, step, *, max_len: int) -> None:
        self.encoder, self.step, self.max_len = encoder, step, max_len
        layers = (len(encoder.get_outputs()) - 2) // 2  # memory, memory_mask, then keys and values
        self.cross_names, self.past_names = layer_names("cross", layers), layer_names("past", layers)

    @classmethod
    def load(cls, directory: str | Path, *, threads: int = 0) -> OnnxSeq2Seq:
        """The graphs export_translation wrote into `directory`, run on `threads` threads."""
        directory = Path(directory)
        config = json.loads((directory / CONFIG).read_text())
        sessions = (session(directory / name, threads=threads) for name in (ENCODER, DECODER_STEP))
        return cls(*sessions, max_len=config["max_len"])

    def encode(self, src: Tensor) -> tuple[list[np.ndarray], Tensor]:
        """src (B, S) -> the cross-attention keys/values of every layer, memory_mask (B, S)."""
        mask, *cross = self.encoder.run(["memory_mask", *self.cross_names], {"src": src.cpu().numpy()})
        return cross, torch.from_numpy(mask)

    def new_cache(self, beams: int = 1) -> OnnxCache:
        if beams != 1:
            raise ValueError("the ONNX decoder step keeps one row per source: greedy search or sampling")
        return OnnxCache()

    def decode(
        self, tgt_in: Tensor, memory: list[np.ndarray] | None, memory_mask: Tensor, cache: OnnxCache | None
    ) -> Tensor:
        """The newest token of each row (B, 1) -> its next-token logits (B, 1, V)."""
        if cache is None:
            raise ValueError("the ONNX decoder step decodes with a cache (use_cache=True)")
        if memory is not None:
            cache.fill(memory)
        feeds = {"tokens": np.ascontiguousarray(tgt_in.numpy()), "memory_mask": memory_mask.numpy()}
        feeds.update(zip(self.cross_names, cache.cross))
        feeds.update(zip(self.past_names, cache.past))
        logits, *cache.past = self.step.run(None, feeds)
        return torch.from_numpy(logits)[:, None]
