"""Pretraining examples as Google's BERT built them (create_pretraining_data.py), with masking
drawn afresh each epoch.

Pairs (`create_pairs`, one pass over the documents per epoch, a pure function of (seed, epoch)):
1. Each document gets a target length: `max_seq_length - 3` (room for [CLS] A [SEP] B [SEP]),
   or, with probability `short_seq_prob` (0.1), a random length in [2, max_seq_length - 3], so
   the model also sees the short sequences of fine-tuning. As in the original, one draw per
   document.
2. Sentences are gathered into a chunk until it reaches the target length or the document ends.
3. Segment A is the first `a_end` sentences of the chunk, `a_end` uniform in [1, len(chunk) - 1]
   (1 for a one-sentence chunk).
4. Segment B is the rest of the chunk (the true continuation, NSP label 0), or, with probability
   0.5 and always for a one-sentence chunk, sentences of another document (label 1): a random
   document (up to 10 draws to avoid this one), from a random sentence on, until B reaches the
   target length minus A's length. The chunk's unused sentences are put back: the next chunk
   starts with them.
5. While A + B is longer than `max_seq_length - 3`, the longer segment (B on a tie) loses one
   token, from its front or its back with probability 0.5 each.
6. The epoch's pairs are shuffled.
Because a segment is a run of consecutive sentences and trimming only shortens its ends, each
pair is four token offsets into one flat array (plus its label): a corpus of millions of tokens
costs a few bytes per pair.

Masking (`mask_tokens`, a pure function of (seed, epoch, example index), so a resumed run sees
the very batches an uninterrupted one would):
1. Candidates are all positions except special tokens ([CLS], [SEP], and also [PAD], [UNK],
   [MASK]: predicting [UNK] teaches nothing). With whole-word masking a `##` piece joins the
   word it continues (only when adjacent: the original could join the first piece of B to the
   last word of A across [SEP]).
2. `num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))`,
   counting [CLS] and [SEP] as the original does.
3. Candidate words are visited in random order; a word is taken if it still fits within
   `num_to_predict` (a longer word is skipped, a shorter later one may still fit).
4. Each chosen token becomes [MASK] with probability 0.8, stays itself with 0.1, and becomes a
   random token with 0.1 (drawn from the non-special vocabulary; the original drew from all of
   it, [PAD] and [unused*] included).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from zoo.config import UserError
from zoo.data.batching import shard
from zoo.data.documents import Document
from zoo.data.seeding import example_rng

IGNORE_INDEX = -100  # label of positions not predicted (Hugging Face's convention)
NSP_CONTINUATION, NSP_RANDOM = 0, 1  # Hugging Face's next_sentence_label
_PAIRS, _MASKS = 0, 1  # zoo.data.seeding streams: keep pair drawing and masking apart


class Vocabulary(Protocol):
    """What examples need of a tokenizer (zoo.data.wordpiece.WordPieceTokenizer has it)."""

    pad_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    special_ids: frozenset[int]
    is_continuation: list[bool]

    @property
    def vocab_size(self) -> int: ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...


@dataclass
class TokenizedCorpus:
    """Documents as one flat array of token ids.

    Sentence s is `tokens[sentence_offsets[s]:sentence_offsets[s + 1]]`; document d is sentences
    `document_offsets[d]:document_offsets[d + 1]`.
    """

    tokens: np.ndarray
    sentence_offsets: np.ndarray
    document_offsets: np.ndarray

    @classmethod
    def encode(cls, documents: Sequence[Document], tokenizer: Vocabulary) -> TokenizedCorpus:
        """Tokenize every sentence; sentences with no token and documents with no sentence left
        are dropped."""
        ids, sentence_lengths, document_sizes = [], [], []
        for document in documents:
            encoded = [s for s in tokenizer.encode_batch(document.sentences) if s]
            if encoded:
                ids.extend(encoded)
                sentence_lengths.extend(len(s) for s in encoded)
                document_sizes.append(len(encoded))
        if not document_sizes:
            raise UserError("no document has any token: is the corpus empty?")
        return cls(
            tokens=np.fromiter((t for s in ids for t in s), dtype=np.int32),
            sentence_offsets=np.concatenate([[0], np.cumsum(sentence_lengths)]),
            document_offsets=np.concatenate([[0], np.cumsum(document_sizes)]),
        )

    @property
    def num_documents(self) -> int:
        return len(self.document_offsets) - 1

    def sentence_spans(self, document: int) -> list[tuple[int, int]]:
        """(start, end) token offsets of the document's sentences."""
        first, last = self.document_offsets[document], self.document_offsets[document + 1]
        offsets = self.sentence_offsets[first : last + 1].tolist()
        return list(zip(offsets[:-1], offsets[1:]))


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: np.random.Generator) -> None:
    """Rule 5: trim the longer span (B on a tie) at a random end until both fit. Spans are
    [start, end] lists, changed in place."""
    while (a[1] - a[0]) + (b[1] - b[0]) > max_tokens:
        longer = a if a[1] - a[0] > b[1] - b[0] else b
        if rng.random() < 0.5:
            longer[0] += 1
        else:
            longer[1] -= 1


def _document_pairs(
    corpus: TokenizedCorpus,
    document: int,
    *,
    max_tokens: int,
    short_seq_prob: float,
    rng: np.random.Generator,
) -> list[tuple[int, ...]]:
    """Rules 1-5 for one document: (a_start, a_end, b_start, b_end, nsp_label) per pair."""
    sentences = corpus.sentence_spans(document)
    target = max_tokens if rng.random() >= short_seq_prob else int(rng.integers(2, max_tokens + 1))
    pairs, chunk, length, i = [], [], 0, 0
    while i < len(sentences):
        chunk.append(sentences[i])
        length += sentences[i][1] - sentences[i][0]
        if i == len(sentences) - 1 or length >= target:
            a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
            a = [chunk[0][0], chunk[a_end - 1][1]]
            if len(chunk) == 1 or rng.random() < 0.5:
                label = NSP_RANDOM
                other = document
                for _ in range(10):
                    other = int(rng.integers(0, corpus.num_documents))
                    if other != document:
                        break
                others = corpus.sentence_spans(other)
                first = int(rng.integers(0, len(others)))
                b_target, end = target - (a[1] - a[0]), first
                while end < len(others) and others[end][1] - others[first][0] < b_target:
                    end += 1
                b = [others[first][0], others[min(end, len(others) - 1)][1]]
                i -= len(chunk) - a_end  # the unused sentences start the next chunk
            else:
                label = NSP_CONTINUATION
                b = [chunk[a_end][0], chunk[-1][1]]
            _truncate_pair(a, b, max_tokens, rng)
            pairs.append((*a, *b, label))
            chunk, length = [], 0
        i += 1
    return pairs


def create_pairs(
    corpus: TokenizedCorpus, *, max_seq_length: int, short_seq_prob: float, seed: int, epoch: int
) -> np.ndarray:
    """The shuffled sentence pairs of one epoch (rules 1-6): an int64 array (N, 5) of
    (a_start, a_end, b_start, b_end, nsp_label), token offsets into `corpus.tokens`."""
    if max_seq_length < 5:
        raise UserError(f"max_seq_length {max_seq_length} leaves no room for two segments")
    rng = example_rng(seed, epoch, stream=_PAIRS)
    pairs = [
        pair
        for document in range(corpus.num_documents)
        for pair in _document_pairs(
            corpus, document, max_tokens=max_seq_length - 3, short_seq_prob=short_seq_prob, rng=rng
        )
    ]
    array = np.array(pairs, dtype=np.int64).reshape(-1, 5)
    return array[rng.permutation(len(array))]


def mask_tokens(
    tokens: np.ndarray,
    vocab: Vocabulary,
    rng: np.random.Generator,
    *,
    masked_lm_prob: float = 0.15,
    max_predictions: int = 20,
    whole_word: bool = False,
    replacements: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Masking rules 1-4 on one sequence: (inputs, labels), labels IGNORE_INDEX where not
    predicted.

    Args:
        tokens: the ids of [CLS] A [SEP] B [SEP].
        replacements: the ids a random replacement draws from (default: the non-special ones).
    """
    if replacements is None:
        replacements = _replacement_ids(vocab)
    groups: list[list[int]] = []
    for position, token in enumerate(tokens.tolist()):
        if token in vocab.special_ids:
            continue
        if whole_word and vocab.is_continuation[token] and groups and groups[-1][-1] == position - 1:
            groups[-1].append(position)
        else:
            groups.append([position])
    num_to_predict = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
    chosen: list[int] = []
    for g in rng.permutation(len(groups)):
        if len(chosen) >= num_to_predict:
            break
        if len(chosen) + len(groups[g]) <= num_to_predict:
            chosen.extend(groups[g])
    chosen_positions = np.array(sorted(chosen), dtype=np.int64)
    inputs, labels = tokens.copy(), np.full_like(tokens, IGNORE_INDEX)
    labels[chosen_positions] = tokens[chosen_positions]
    draw = rng.random(len(chosen_positions))
    inputs[chosen_positions[draw < 0.8]] = vocab.mask_id
    randomised = chosen_positions[draw >= 0.9]
    inputs[randomised] = rng.choice(replacements, size=len(randomised))
    return inputs, labels


def _replacement_ids(vocab: Vocabulary) -> np.ndarray:
    return np.array([i for i in range(vocab.vocab_size) if i not in vocab.special_ids], dtype=np.int64)


@dataclass
class Batch:
    """A batch of pretraining examples, padded to its longest sequence. Shapes: B pairs, T tokens.

    input_ids (B, T): [CLS] A [SEP] B [SEP] after masking, then [PAD].
    token_type_ids (B, T): 0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP]; 0 on padding.
    attention_mask (B, T): bool, True on real tokens.
    mlm_labels (B, T): the original id where predicted, IGNORE_INDEX elsewhere.
    nsp_labels (B,): NSP_CONTINUATION (0) or NSP_RANDOM (1).
    """

    input_ids: Tensor
    token_type_ids: Tensor
    attention_mask: Tensor
    mlm_labels: Tensor
    nsp_labels: Tensor

    def __len__(self) -> int:
        return len(self.nsp_labels)


class PretrainingExamples:
    """The examples of a tokenized corpus, epoch by epoch (pairs and masks as the module says).

    Args:
        corpus: the documents as token ids.
        vocab: the tokenizer (special ids, `##` pieces, vocabulary size).
        max_seq_length: tokens per example, [CLS] and both [SEP] included (BERT: 128, then 512).
        short_seq_prob: probability of a shorter target length for a document.
        masked_lm_prob: fraction of tokens predicted. max_predictions_per_seq: at most this many.
        whole_word_mask: mask all pieces of a word together.
        seed: with the epoch and the example index, fixes every random choice.
    """

    def __init__(
        self,
        corpus: TokenizedCorpus,
        vocab: Vocabulary,
        *,
        max_seq_length: int = 128,
        short_seq_prob: float = 0.1,
        masked_lm_prob: float = 0.15,
        max_predictions_per_seq: int = 20,
        whole_word_mask: bool = False,
        seed: int = 0,
    ) -> None:
        self.corpus, self.vocab, self.seed = corpus, vocab, seed
        self.max_seq_length, self.short_seq_prob = max_seq_length, short_seq_prob
        self.masked_lm_prob, self.max_predictions = masked_lm_prob, max_predictions_per_seq
        self.whole_word_mask = whole_word_mask
        self.replacements = _replacement_ids(vocab)
        self._pairs: tuple[int, np.ndarray] | None = None

    def pairs(self, epoch: int) -> np.ndarray:
        """The epoch's pairs (rules 1-6); the last epoch's are kept."""
        if self._pairs is None or self._pairs[0] != epoch:
            self._pairs = (
                epoch,
                create_pairs(
                    self.corpus,
                    max_seq_length=self.max_seq_length,
                    short_seq_prob=self.short_seq_prob,
                    seed=self.seed,
                    epoch=epoch,
                ),
            )
        return self._pairs[1]

    def example(self, epoch: int, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Example `index` of `epoch`: (input_ids, token_type_ids, mlm_labels, nsp_label)."""
        a_start, a_end, b_start, b_end, label = self.pairs(epoch)[index].tolist()
        tokens = self.corpus.tokens
        v = self.vocab
        ids = np.concatenate(
            [[v.cls_id], tokens[a_start:a_end], [v.sep_id], tokens[b_start:b_end], [v.sep_id]]
        ).astype(np.int64)
        segments = np.zeros_like(ids)
        segments[a_end - a_start + 2 :] = 1
        rng = example_rng(self.seed, epoch, index, stream=_MASKS)
        inputs, labels = mask_tokens(
            ids,
            v,
            rng,
            masked_lm_prob=self.masked_lm_prob,
            max_predictions=self.max_predictions,
            whole_word=self.whole_word_mask,
            replacements=self.replacements,
        )
        return inputs, segments, labels, label

    def collate(self, epoch: int, indices: Sequence[int]) -> Batch:
        """The examples `indices` of `epoch` as one padded batch."""
        examples = [self.example(epoch, int(i)) for i in indices]
        width = max(len(e[0]) for e in examples)
        input_ids = torch.full((len(examples), width), self.vocab.pad_id, dtype=torch.long)
        token_types = torch.zeros((len(examples), width), dtype=torch.long)
        labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
        for row, (ids, segments, mlm, _) in enumerate(examples):
            input_ids[row, : len(ids)] = torch.from_numpy(ids)
            token_types[row, : len(ids)] = torch.from_numpy(segments)
            labels[row, : len(ids)] = torch.from_numpy(mlm)
        lengths = torch.tensor([len(e[0]) for e in examples])
        return Batch(
            input_ids=input_ids,
            token_type_ids=token_types,
            attention_mask=torch.arange(width)[None, :] < lengths[:, None],
            mlm_labels=labels,
            nsp_labels=torch.tensor([e[3] for e in examples]),
        )

    def batch_indices(self, epoch: int, batch_size: int) -> list[range]:
        """The epoch's full batches of example indices, in order (the pairs are shuffled)."""
        count = len(self.pairs(epoch)) // batch_size
        return [range(b * batch_size, (b + 1) * batch_size) for b in range(count)]

    def batches(
        self, epoch: int, batch_size: int, *, start: int = 0, rank: int = 0, world_size: int = 1
    ) -> Iterator[Batch]:
        """This rank's full batches of `epoch` from its `start`-th (see zoo.data.batching.shard)."""
        for indices in shard(self.batch_indices(epoch, batch_size), rank, world_size)[start:]:
            yield self.collate(epoch, indices)
