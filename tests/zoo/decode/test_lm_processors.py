"""zoo.decode.logits_processors against Hugging Face's processor and warper classes on random
scores: the same tensors, bit for bit."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import (
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from zoo.decode import GenerationConfig
from zoo.decode.logits_processors import (
    ban_repeated_ngrams,
    penalize_repetitions,
    process,
    top_p_filter,
    warp,
)

ROWS, VOCAB = 6, 50


def random_scores(seed: int = 0, rows: int = ROWS) -> torch.Tensor:
    return torch.randn(rows, VOCAB, generator=torch.Generator().manual_seed(seed)) * 3


def random_sequences(length: int = 20, vocab: int = 8) -> torch.Tensor:
    """Ids from a few values, so n-grams repeat."""
    return torch.randint(0, vocab, (ROWS, length), generator=torch.Generator().manual_seed(1))


def all_real(sequences: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(sequences, dtype=torch.bool)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("top_p", [0.0, 0.1, 0.5, 0.9, 0.99, 1.0])
def test_top_p_equals_hugging_face(top_p, seed):
    scores = random_scores(seed)
    assert torch.equal(top_p_filter(scores, top_p), TopPLogitsWarper(top_p)(None, scores))


def test_top_p_equals_hugging_face_on_ties():
    scores = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0], [2.0, 0.0, 2.0, 0.0, 2.0]])
    for top_p in (0.3, 0.5, 0.75, 0.8):
        assert torch.equal(top_p_filter(scores, top_p), TopPLogitsWarper(top_p)(None, scores))


@pytest.mark.parametrize(
    "temperature, top_k, top_p", [(1.0, 0, 1.0), (0.7, 0, 1.0), (1.3, 5, 1.0), (1.0, 10, 0.8), (0.5, 3, 0.6)]
)
def test_warpers_equal_hugging_face_in_its_order(temperature, top_k, top_p):
    scores = random_scores()
    config = GenerationConfig(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p)
    expected = scores
    if temperature != 1.0:
        expected = TemperatureLogitsWarper(temperature)(None, expected)
    if top_k:
        expected = TopKLogitsWarper(top_k)(None, expected)
    if top_p < 1.0:
        expected = TopPLogitsWarper(top_p)(None, expected)
    assert torch.equal(warp(scores, config), expected)


def test_top_k_at_least_the_vocabulary_keeps_all():
    scores = random_scores()
    config = GenerationConfig(do_sample=True, top_k=VOCAB + 5)
    assert torch.equal(warp(scores, config), TopKLogitsWarper(VOCAB + 5)(None, scores))


@pytest.mark.parametrize("penalty", [0.6, 1.5])
def test_repetition_penalty_equals_hugging_face(penalty):
    sequences, scores = random_sequences(vocab=VOCAB), random_scores()
    ours = penalize_repetitions(scores, sequences, all_real(sequences), penalty)
    assert torch.equal(ours, RepetitionPenaltyLogitsProcessor(penalty)(sequences, scores.clone()))


def test_repetition_penalty_skips_left_padding_as_hugging_face():
    sequences, scores = random_sequences(vocab=VOCAB), random_scores()
    pads = torch.tensor([0, 3, 7, 0, 1, 19])
    real = torch.arange(sequences.shape[1]) >= pads[:, None]
    hf = RepetitionPenaltyLogitsProcessor(1.4, prompt_ignore_length=pads)
    assert torch.equal(penalize_repetitions(scores, sequences, real, 1.4), hf(sequences, scores.clone()))


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_no_repeat_ngram_equals_hugging_face(size):
    sequences, scores = random_sequences(vocab=2), random_scores()
    ours = ban_repeated_ngrams(scores, sequences, all_real(sequences), size)
    assert torch.equal(ours, NoRepeatNGramLogitsProcessor(size)(sequences, scores))
    assert ours.isinf().any()  # something was banned


def test_no_repeat_ngram_ignores_left_padding():
    """A padded row bans what its real ids alone ban."""
    sequences, scores = random_sequences(vocab=2), random_scores()
    padded = torch.cat([torch.zeros(ROWS, 4, dtype=torch.long), sequences], dim=1)
    real = torch.cat([torch.zeros(ROWS, 4, dtype=torch.bool), all_real(sequences)], dim=1)
    expected = ban_repeated_ngrams(scores, sequences, all_real(sequences), 3)
    assert torch.equal(ban_repeated_ngrams(scores, padded, real, 3), expected)
    assert not torch.equal(NoRepeatNGramLogitsProcessor(3)(padded, scores), expected)  # reads the padding


@pytest.mark.parametrize("new_tokens", [0, 2, 3, 5])
def test_min_new_tokens_equals_hugging_face(new_tokens):
    sequences, scores = random_sequences(), random_scores()
    prompt = sequences.shape[1] - new_tokens
    config = GenerationConfig(min_new_tokens=3, eos_id=7)
    expected = MinNewTokensLengthLogitsProcessor(prompt, 3, 7)(sequences, scores)
    assert torch.equal(process(scores, sequences, all_real(sequences), new_tokens, config), expected)


def test_processors_chain_in_hugging_face_order():
    sequences, scores = random_sequences(), random_scores()
    config = GenerationConfig(repetition_penalty=1.3, no_repeat_ngram_size=2, min_new_tokens=4, eos_id=1)
    expected = scores.clone()
    for processor in (
        RepetitionPenaltyLogitsProcessor(1.3),
        NoRepeatNGramLogitsProcessor(2),
        MinNewTokensLengthLogitsProcessor(sequences.shape[1] - 2, 4, 1),
    ):
        expected = processor(sequences, expected)
    assert torch.equal(process(scores, sequences, all_real(sequences), 2, config), expected)
