"""Pretraining examples: the rules of Google's create_pretraining_data.py, checked on many draws."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.bert.examples import (
    IGNORE_INDEX,
    NSP_CONTINUATION,
    NSP_RANDOM,
    PretrainingExamples,
    TokenizedCorpus,
    create_pairs,
    mask_tokens,
)
from zoo.data.documents import Document

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


class WordVocab:
    """One id per whitespace word; words starting with ## continue the word before."""

    def __init__(self, words: list[str]) -> None:
        self.ids = {w: i for i, w in enumerate(SPECIALS + words)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(5)
        self.special_ids = frozenset(range(5))
        self.is_continuation = [w.startswith("##") for w in self.ids]
        self.vocab_size = len(self.ids)

    def encode_batch(self, texts):
        return [[self.ids[w] for w in t.split()] for t in texts]


WORDS = [f"w{i}" for i in range(500)] + [f"##p{i}" for i in range(50)]
VOCAB = WordVocab(WORDS)


def documents(num_documents: int, sentences: int, words: int, seed: int = 0) -> list[Document]:
    """Documents of numbered words: document d, sentence s, word k is w{(7d + s + k) % 500},
    every third word followed by a ## piece."""
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(num_documents):
        lines = []
        for s in range(sentences):
            tokens = []
            for k in range(words):
                tokens.append(f"w{(7 * d + s + k) % 500}")
                if k % 3 == 0:
                    tokens.append(f"##p{rng.integers(50)}")
            lines.append(" ".join(tokens))
        docs.append(Document(f"d{d}", lines))
    return docs


def document_of(corpus: TokenizedCorpus, offset: int) -> int:
    sentence = np.searchsorted(corpus.sentence_offsets, offset, side="right") - 1
    return int(np.searchsorted(corpus.document_offsets, sentence, side="right") - 1)


@pytest.fixture(scope="module")
def corpus() -> TokenizedCorpus:
    return TokenizedCorpus.encode(documents(300, 30, 3), VOCAB)


def test_pairs_fit_and_segments_come_from_the_right_documents(corpus):
    pairs = create_pairs(corpus, max_seq_length=32, short_seq_prob=0.1, seed=0, epoch=0)
    a_len, b_len = pairs[:, 1] - pairs[:, 0], pairs[:, 3] - pairs[:, 2]
    assert (a_len >= 1).all() and (b_len >= 1).all() and (a_len + b_len <= 29).all()
    for a_start, a_end, b_start, b_end, label in pairs.tolist():
        a_doc, b_doc = document_of(corpus, a_start), document_of(corpus, b_start)
        assert a_doc == document_of(corpus, a_end - 1) and b_doc == document_of(corpus, b_end - 1)
        if label == NSP_CONTINUATION:  # B follows A in the same document (trimming may leave a gap)
            assert b_doc == a_doc and b_start >= a_end
        else:
            assert b_doc != a_doc


def test_nsp_is_balanced(corpus):
    pairs = create_pairs(corpus, max_seq_length=32, short_seq_prob=0.1, seed=1, epoch=0)
    random_share = (pairs[:, 4] == NSP_RANDOM).mean()
    # 0.5 plus the one-sentence chunks that must take a random B (a few per cent here).
    assert 0.5 <= random_share < 0.56, random_share


def test_short_sequences_come_with_probability_short_seq_prob():
    corpus = TokenizedCorpus.encode(documents(2000, 40, 2), VOCAB)  # sentences of 3-4 tokens
    sentence_of = np.searchsorted(corpus.sentence_offsets, np.arange(len(corpus.tokens)), "right") - 1
    document_of_token = np.searchsorted(corpus.document_offsets, sentence_of, "right") - 1
    document_end = corpus.sentence_offsets[corpus.document_offsets[1:]]
    for p, low, high in [(0.0, 0.0, 0.0), (0.1, 0.07, 0.13), (0.5, 0.44, 0.56)]:
        pairs = create_pairs(corpus, max_seq_length=64, short_seq_prob=p, seed=2, epoch=0)
        # A continuation pair that does not end its document filled its chunk up to the
        # document's target, so it is trimmed to exactly 61 tokens unless the target was short.
        docs = document_of_token[pairs[:, 0]]
        inner = (pairs[:, 4] == NSP_CONTINUATION) & (pairs[:, 3] < document_end[docs])
        lengths = pairs[:, 1] - pairs[:, 0] + pairs[:, 3] - pairs[:, 2]
        short_docs = np.unique(docs[inner & (lengths < 61)])
        share = len(short_docs) / len(np.unique(docs[inner]))
        assert low <= share <= high, (p, share)


def test_masking_rates_counts_and_specials():
    rng = np.random.default_rng(0)
    tokens = np.array(
        [VOCAB.cls_id] + list(range(5, 65)) + [VOCAB.sep_id] + list(range(65, 125)) + [VOCAB.sep_id]
    )
    outcomes = {"mask": 0, "same": 0, "random": 0}
    for _ in range(2000):
        inputs, labels = mask_tokens(tokens, VOCAB, rng, max_predictions=20)
        chosen = labels != IGNORE_INDEX
        assert chosen.sum() == min(20, round(len(tokens) * 0.15))
        assert (labels[chosen] == tokens[chosen]).all()
        assert (inputs[~chosen] == tokens[~chosen]).all()
        assert not np.isin(np.flatnonzero(chosen), [0, 61, 122]).any()
        outcomes["mask"] += (inputs[chosen] == VOCAB.mask_id).sum()
        outcomes["same"] += (inputs[chosen] == tokens[chosen]).sum()
        replaced = inputs[chosen][(inputs[chosen] != VOCAB.mask_id) & (inputs[chosen] != tokens[chosen])]
        outcomes["random"] += len(replaced)
        assert not np.isin(replaced, list(VOCAB.special_ids)).any()
    total = sum(outcomes.values())
    # The random draw equals the original with probability 1/550: inside the tolerance.
    assert abs(outcomes["mask"] / total - 0.8) < 0.01
    assert abs(outcomes["same"] / total - 0.1) < 0.01
    assert abs(outcomes["random"] / total - 0.1) < 0.01


def test_max_predictions_and_at_least_one():
    rng = np.random.default_rng(0)
    long = np.array([VOCAB.cls_id] + [7] * 300 + [VOCAB.sep_id, 8, VOCAB.sep_id])
    assert (mask_tokens(long, VOCAB, rng, max_predictions=20)[1] != IGNORE_INDEX).sum() == 20
    short = np.array([VOCAB.cls_id, 7, VOCAB.sep_id, 8, VOCAB.sep_id])
    assert (mask_tokens(short, VOCAB, rng)[1] != IGNORE_INDEX).sum() == 1


def test_whole_word_masking_takes_every_piece_of_a_word():
    rng = np.random.default_rng(0)
    piece = VOCAB.ids["##p0"]
    # words of 1, 2 and 3 pieces; a ## piece right after [SEP] starts a word of its own
    body = [10, 11, piece, 12, piece, piece] * 10
    tokens = np.array([VOCAB.cls_id, *body, VOCAB.sep_id, piece, *body, VOCAB.sep_id])
    word_of = np.cumsum(
        [
            not VOCAB.is_continuation[t] or t == piece and prev == VOCAB.sep_id
            for prev, t in zip([0, *tokens[:-1]], tokens)
        ]
    )
    for _ in range(500):
        _, labels = mask_tokens(tokens, VOCAB, rng, whole_word=True)
        chosen = labels != IGNORE_INDEX
        for word in np.unique(word_of[chosen]):
            assert chosen[word_of == word].all()
        assert chosen.sum() <= 20


def test_examples_layout_and_determinism(corpus):
    examples = PretrainingExamples(corpus, VOCAB, max_seq_length=32, seed=3)
    again = PretrainingExamples(corpus, VOCAB, max_seq_length=32, seed=3)
    for index in range(0, 200, 7):
        inputs, segments, labels, nsp = examples.example(1, index)
        seps = np.flatnonzero(inputs == VOCAB.sep_id)  # specials are never replaced or drawn
        assert inputs[0] == VOCAB.cls_id and len(seps) == 2 and seps[1] == len(inputs) - 1
        assert len(inputs) <= 32 and (inputs == VOCAB.cls_id).sum() == 1
        first_sep = seps[0]
        assert (segments[: first_sep + 1] == 0).all()
        assert (segments[first_sep + 1 :] == 1).all()
        for got, want in zip(again.example(1, index), (inputs, segments, labels, nsp)):
            np.testing.assert_array_equal(got, want)
    differs = [not np.array_equal(examples.example(1, i)[2], examples.example(2, i)[2]) for i in range(20)]
    assert all(differs)  # masks (and pairs) are drawn afresh each epoch


def test_resumed_batches_equal_uninterrupted_ones_and_ranks_split_them(corpus):
    examples = PretrainingExamples(corpus, VOCAB, max_seq_length=32, seed=4)
    full = list(examples.batches(0, 8))
    fresh = PretrainingExamples(corpus, VOCAB, max_seq_length=32, seed=4)
    for a, b in zip(full[5:], fresh.batches(0, 8, start=5)):
        assert all(
            np.array_equal(getattr(a, f), getattr(b, f))
            for f in ("input_ids", "token_type_ids", "attention_mask", "mlm_labels", "nsp_labels")
        )
    rank1 = list(examples.batches(0, 8, rank=1, world_size=2))
    assert len(rank1) == len(full) // 2
    assert np.array_equal(rank1[0].input_ids, full[1].input_ids)
    batch = full[0]
    assert (batch.input_ids[~batch.attention_mask] == VOCAB.pad_id).all()
    assert (batch.mlm_labels[~batch.attention_mask] == IGNORE_INDEX).all()
