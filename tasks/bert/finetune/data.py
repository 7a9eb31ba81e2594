"""Fine-tuning examples as BERT inputs: WordPiece ids, token types, labels, and what decoding
maps back (a word's first piece, a window's character offsets); padded batches, in a seeded
order that a resumed run repeats exactly.

zoo.data.wordpiece.WordPieceTokenizer gives ids only; the word of each piece (tagging) and the
characters of each piece (answer spans) come from the `tokenizers.Tokenizer` it wraps (its
public `tokenizer`), whose encodings carry `word_ids` and `offsets` into the original text
(lowercasing and accent stripping included).

- classify: [CLS] a [SEP] (b [SEP]), the longer text cut first (Hugging Face's longest_first).
- tag: the words' pieces, the first piece of each word labelled, the others IGNORE; words past
  max_seq_length get no piece (decoded as O, so they count against the score).
- span: [CLS] question [SEP] window [SEP], windows every `doc_stride` passage tokens (Google's
  run_squad); a window without the whole answer points at [CLS] (index 0), as in BERT's code.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from tokenizers import Tokenizer
from torch import Tensor

from tasks.bert.finetune.readers import SquadExample, TaggedSentence
from zoo.config import UserError
from zoo.data.batching import shard
from zoo.data.seeding import example_generator
from zoo.data.wordpiece import WordPieceTokenizer

IGNORE = -100  # a position no loss reads (F.cross_entropy's ignore_index)
Offsets = list[tuple[int, int] | None]


@dataclass
class Batch:
    """input_ids, token_type_ids (B, T); attention_mask bool (B, T), True on real tokens;
    labels: classify (B,), tag (B, T) with IGNORE, span (B, 2) start and end positions;
    teacher_logits (B, L): classify under distillation, else None."""

    input_ids: Tensor
    token_type_ids: Tensor
    attention_mask: Tensor
    labels: Tensor
    teacher_logits: Tensor | None = None

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class Encoded:
    """The inputs of a split, one item per sentence (pair) or window, and per item what decoding
    needs: `first` (tag: each word's first-piece position, -1 for none), `question` and
    `offsets` (span: the question a window asks, each token's characters, None outside the passage);
    `teacher` (classify under distillation: a teacher's (N, L) logits, one row per item)."""

    ids: list[list[int]]
    types: list[list[int]]
    labels: list  # int | list[int] | tuple[int, int] per item
    pad_id: int
    first: list[list[int]] = field(default_factory=list)
    question: list[int] = field(default_factory=list)
    offsets: list[Offsets] = field(default_factory=list)
    teacher: Tensor | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def collate(self, indices: Sequence[int]) -> Batch:
        """Items `indices` padded to the longest."""
        width = max(len(self.ids[i]) for i in indices)
        ids = torch.full((len(indices), width), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(indices), width), dtype=torch.long)
        for row, i in enumerate(indices):
            ids[row, : len(self.ids[i])] = torch.tensor(self.ids[i])
            types[row, : len(self.types[i])] = torch.tensor(self.types[i])
        lengths = torch.tensor([len(self.ids[i]) for i in indices])
        labels = [self.labels[i] for i in indices]
        if isinstance(labels[0], list):  # per token: padded with IGNORE
            labels = [row + [IGNORE] * (width - len(row)) for row in labels]
        mask = torch.arange(width)[None, :] < lengths[:, None]
        teacher = None if self.teacher is None else self.teacher[list(indices)]
        return Batch(ids, types, mask, torch.tensor(labels), teacher)

    def train_batches(
        self, epoch: int, batch_size: int, *, seed: int, start: int = 0, rank: int = 0, world_size: int = 1
    ) -> Iterator[Batch]:
        """This rank's full batches of `epoch` from its `start`-th, in an order drawn from
        (seed, epoch) alone, so a resumed run sees the batches an uninterrupted one would."""
        order = torch.randperm(len(self), generator=example_generator(seed, epoch)).tolist()
        full = [order[b : b + batch_size] for b in range(0, len(order) - batch_size + 1, batch_size)]
        if len(full) < world_size:
            raise UserError(
                f"{len(self):,} training inputs make {len(full)} full batch(es) of "
                f"data.batch_size={batch_size}, fewer than the {world_size} rank(s): lower data.batch_size"
            )
        for indices in shard(full, rank, world_size)[start:]:
            yield self.collate(indices)

    def eval_batches(self, batch_size: int) -> Iterator[tuple[list[int], Batch]]:
        """(items, batch) in order of length, for as little padding as can be."""
        order = sorted(range(len(self)), key=lambda i: len(self.ids[i]))
        for b in range(0, len(order), batch_size):
            yield order[b : b + batch_size], self.collate(order[b : b + batch_size])


def raw(tokenizer: WordPieceTokenizer) -> Tokenizer:
    """The wrapped `tokenizers` pipeline, without any truncation or padding a tokenizer.json
    may carry (lengths are cut here, per head)."""
    pipeline = Tokenizer.from_str(tokenizer.tokenizer.to_str())
    pipeline.no_truncation()
    pipeline.no_padding()
    return pipeline


def encode_texts(
    tokenizer: WordPieceTokenizer, texts: list[tuple[str, ...]], labels: list[int], max_len: int
) -> Encoded:
    """Sentences or pairs: [CLS] a [SEP] (b [SEP]) of at most `max_len` tokens."""
    pieces = [[e.ids for e in raw(tokenizer).encode_batch(list(column), add_special_tokens=False)]
              for column in zip(*texts)]  # fmt: skip
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    ids, types = [], []
    for parts in zip(*pieces):
        a, b = _longest_first(parts, max_len - 1 - len(parts))
        ids.append([cls, *a, sep, *([*b, sep] if len(parts) == 2 else [])])
        types.append([0] * (len(a) + 2) + [1] * (len(ids[-1]) - len(a) - 2))
    return Encoded(ids, types, labels, tokenizer.pad_id)


def _longest_first(parts: Sequence[list[int]], budget: int) -> tuple[list[int], list[int]]:
    """The texts' heads that fit `budget` together, as Hugging Face's fast tokenizers cut a pair
    (`longest_first`): a text of at most half the budget stays whole and the other gets the rest;
    else each gets half, the longer text the odd token (the second one on a tie). Cutting the
    longer a token at a time would give the odd token to the second text even where it is shorter."""
    a, b = parts[0], parts[1] if len(parts) == 2 else []
    if len(a) + len(b) <= budget:
        return a, b
    half = budget // 2
    if len(a) > len(b):
        kept_b = min(len(b), half)
        return a[: budget - kept_b], b[:kept_b]
    kept_a = min(len(a), half)
    return a[:kept_a], b[: budget - kept_a]


def encode_words(
    tokenizer: WordPieceTokenizer, sentences: list[TaggedSentence], tag_ids: list[list[int]], max_len: int
) -> Encoded:
    """Words as pieces, each word's first piece labelled with its tag id (`tag_ids`, one per word)."""
    words = [list(s.words) for s in sentences]
    encodings = raw(tokenizer).encode_batch(words, is_pretokenized=True, add_special_tokens=False)
    data = Encoded([], [], [], tokenizer.pad_id)
    for encoding, tags, sentence in zip(encodings, tag_ids, words):
        kept = encoding.ids[: max_len - 2]
        first, labels = [-1] * len(sentence), [IGNORE] * (len(kept) + 2)
        for position, word in enumerate(encoding.word_ids[: len(kept)], start=1):
            if word is not None and first[word] < 0:
                first[word], labels[position] = position, tags[word]
        data.ids.append([tokenizer.cls_id, *kept, tokenizer.sep_id])
        data.types.append([0] * (len(kept) + 2))
        data.labels.append(labels)
        data.first.append(first)
    return data


def encode_questions(
    tokenizer: WordPieceTokenizer,
    examples: list[SquadExample],
    *,
    max_len: int,
    doc_stride: int,
    max_query_length: int,
) -> Encoded:
    """Questions on passages as windows; a window's label is the first answer's (start, end)
    token positions, or (0, 0) where the window does not hold it whole."""
    pipeline = raw(tokenizer)
    contexts = {
        text: pipeline.encode(text, add_special_tokens=False) for text in {e.context for e in examples}
    }
    data = Encoded([], [], [], tokenizer.pad_id)
    for number, example in enumerate(examples):
        query = pipeline.encode(example.question, add_special_tokens=False).ids[:max_query_length]
        passage = contexts[example.context]
        answer = _token_span(passage.offsets, example.answers[0]) if example.answers else None
        room = max_len - len(query) - 3
        for start in _window_starts(len(passage.ids), room, doc_stride):
            end = min(start + room, len(passage.ids))
            shift = len(query) + 2 - start  # passage token -> position in the window
            data.ids.append(
                [tokenizer.cls_id, *query, tokenizer.sep_id, *passage.ids[start:end], tokenizer.sep_id]
            )
            data.types.append([0] * (len(query) + 2) + [1] * (end - start + 1))
            data.offsets.append([None] * (len(query) + 2) + list(passage.offsets[start:end]) + [None])
            inside = answer is not None and start <= answer[0] and answer[1] < end
            data.labels.append((answer[0] + shift, answer[1] + shift) if inside else (0, 0))
            data.question.append(number)
    return data


def _window_starts(length: int, room: int, stride: int) -> list[int]:
    """Where each window starts: every `stride` tokens until one reaches the passage's end."""
    starts = [0]
    while starts[-1] + room < length:
        starts.append(starts[-1] + min(room, stride))
    return starts


def _token_span(offsets: list[tuple[int, int]], answer: tuple[str, int]) -> tuple[int, int] | None:
    """The passage tokens (first, last) that cover the answer's characters; None if none does."""
    text, start = answer
    end = start + len(text)
    covering = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
    return (covering[0], covering[-1]) if covering else None
