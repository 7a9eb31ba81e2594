"""A tiny random encoder-decoder and a reference scorer shared by the decoding tests."""

from __future__ import annotations

import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.models import ModelConfig, build_model

PAD, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.bos, SPECIAL_IDS.eos


def tiny_model(vocab: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        encoder_layers=2, decoder_layers=2, dim=32, ffn_dim=64, num_heads=4, dropout=0.0, max_len=128
    )
    return build_model(cfg, vocab, vocab, PAD).eval()


@pytest.fixture
def make_model():
    """tiny_model(vocab, seed) -> a random eval-mode Transformer."""
    return tiny_model


@pytest.fixture
def score():
    """sequence_logprobs(model, src, hyps) -> teacher-forced log p(hyp + EOS | src) per hyp."""
    return sequence_logprobs


@pytest.fixture
def model() -> torch.nn.Module:
    return tiny_model(vocab=19)


@pytest.fixture
def src() -> torch.Tensor:
    """Three sentences of different lengths, right-padded."""
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 19, (3, 6), generator=g)
    src[1, 4:] = PAD
    src[2, 2:] = PAD
    return src


@torch.no_grad()
def sequence_logprobs(model: torch.nn.Module, src: torch.Tensor, hyps: list[list[int]]) -> list[float]:
    """log p(ids + EOS | src) of each hypothesis by one teacher-forced forward: the reference
    every search is checked against."""
    longest = max(len(ids) for ids in hyps) + 1
    tgt_in = torch.full((len(hyps), longest), PAD)
    tgt_out = torch.full((len(hyps), longest), PAD)
    for row, ids in enumerate(hyps):
        tgt_in[row, : len(ids) + 1] = torch.tensor([BOS] + ids)
        tgt_out[row, : len(ids) + 1] = torch.tensor(ids + [EOS])
    logprobs = model(src.expand(len(hyps), -1), tgt_in).log_softmax(-1)
    picked = logprobs.gather(2, tgt_out[..., None]).squeeze(2).masked_fill(tgt_out == PAD, 0.0)
    return picked.sum(1).tolist()
