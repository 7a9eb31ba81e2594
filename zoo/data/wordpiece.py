"""BERT's WordPiece vocabulary with Hugging Face `tokenizers`.

Two ways in: train a vocabulary on the training documents (`WordPieceTokenizer.train`), or read
the `vocab.txt` of an existing BERT checkpoint (`WordPieceTokenizer.from_vocab`), which builds
the same pipeline as `transformers.BertTokenizerFast` (BERT normaliser, BERT pre-tokeniser,
WordPiece with `##` continuations), so Hugging Face checkpoints see exactly the ids they were
trained on. The whole pipeline serialises to one JSON file (`to_bytes`), which travels inside
every checkpoint of a run; `vocab_text` gives the `vocab.txt` of a Hugging Face export.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer

from zoo.config import UserError
from zoo.data.hf_tokenizer import HFTokenizer

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
CONTINUATION = "##"


class WordPieceTokenizer(HFTokenizer):
    """Text <-> WordPiece ids; the special ids are looked up by token, whatever the vocabulary.

    Args:
        tokenizer: a `tokenizers.Tokenizer` with a WordPiece model holding the five special tokens.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        super().__init__(tokenizer)
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise UserError(f"WordPiece vocabulary lacks the special tokens {missing}")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (vocab[t] for t in SPECIAL_TOKENS)
        self.special_ids = frozenset((self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id))
        tokens = self.tokens()
        # Whole-word masking groups a word's pieces: every "##" piece continues the word before.
        self.is_continuation = [t.startswith(CONTINUATION) for t in tokens]

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        vocab_size: int,
        lowercase: bool = True,
        min_frequency: int = 2,
        limit_alphabet: int = 1000,
    ) -> WordPieceTokenizer:
        """A vocabulary of at most `vocab_size` pieces learnt from `texts` (streamed): the special
        tokens (ids 0-4), then the pieces in sorted order. (Ties between equally frequent merges
        may still pick other pieces in another training: a run keeps the vocabulary it trained,
        and runs to be compared can share one through `data.tokenizer`.)

        Args:
            lowercase: lowercase and strip accents, as the uncased BERT models do.
            min_frequency: pieces seen fewer times are not merged.
            limit_alphabet: keep at most this many single characters (the rest become [UNK]).
        """
        bert = BertWordPieceTokenizer(lowercase=lowercase)
        bert.train_from_iterator(
            texts,
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            limit_alphabet=limit_alphabet,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )
        # The trainer numbers pieces in hash-map order, which changes from process to process;
        # WordPiece matching does not depend on ids, so sorted ids make runs agree.
        pieces = sorted(set(bert.get_vocab()) - set(SPECIAL_TOKENS))
        vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *pieces])}
        return cls(BertWordPieceTokenizer(vocab, lowercase=lowercase)._tokenizer)

    @classmethod
    def whole_words(cls, texts: Iterable[str], *, lowercase: bool = True) -> WordPieceTokenizer:
        """A vocabulary of every word in `texts` (as BERT's normaliser and pre-tokeniser cut
        them) plus their characters, with and without "##": deterministic, unlike WordPiece
        training, whose trainer breaks ties between equally frequent merges in hash-map order
        (a fresh order in every process). For closed vocabularies such as the built-in corpus.
        """
        cutter = BertWordPieceTokenizer(lowercase=lowercase)
        words = {
            word
            for text in texts
            for word, _ in cutter.pre_tokenizer.pre_tokenize_str(cutter.normalizer.normalize_str(text))
        }
        chars = sorted({c for word in words for c in word})
        pieces = [*chars, *(CONTINUATION + c for c in chars), *sorted(words - set(chars))]
        vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *pieces])}
        return cls(BertWordPieceTokenizer(vocab, lowercase=lowercase)._tokenizer)

    @classmethod
    def from_vocab(
        cls,
        path: str | Path,
        *,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        chinese_chars: bool = True,
    ) -> WordPieceTokenizer:
        """The tokenizer of a BERT `vocab.txt` (one piece per line, line number = id), with the
        settings of `BertTokenizerFast(vocab_file, do_lower_case=lowercase, strip_accents=...,
        tokenize_chinese_chars=chinese_chars)` (strip_accents None: as lowercase)."""
        path = Path(path)
        if not path.is_file():
            raise UserError(f"WordPiece vocabulary not found: {path}")
        # tokenizers reads each line without its trailing whitespace; a vocabulary without the
        # special tokens would fail inside it on the first one missing, as a TypeError.
        pieces = {line.rstrip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()}
        missing = [token for token in SPECIAL_TOKENS if token not in pieces]
        if missing:
            raise UserError(
                f"{path}: the vocabulary lacks the special tokens {' '.join(missing)} "
                f"(BERT's WordPiece needs {' '.join(SPECIAL_TOKENS)})"
            )
        bert = BertWordPieceTokenizer(
            str(path), lowercase=lowercase, strip_accents=strip_accents, handle_chinese_chars=chinese_chars
        )
        return cls(bert._tokenizer)

    @classmethod
    def load(cls, path: str | Path, *, lowercase: bool = True) -> WordPieceTokenizer:
        """A `vocab.txt`, a `tokenizer.json` this class wrote, or a directory holding either (a
        zoo run continued under a new schedule, a Hugging Face checkpoint)."""
        path = Path(path).expanduser()
        if path.is_dir():
            found = [path / name for name in ("tokenizer.json", "vocab.txt") if (path / name).is_file()]
            if not found:
                raise UserError(f"{path}: holds neither tokenizer.json nor vocab.txt")
            path = found[0]
        if path.suffix != ".json":
            return cls.from_vocab(path, lowercase=lowercase)
        return cls.from_json_file(path)

    @property
    def lowercase(self) -> bool:
        """Whether the normaliser lowercases (Hugging Face's `do_lower_case`)."""
        return bool(json.loads(self.tokenizer.to_str())["normalizer"]["lowercase"])

    def vocab_text(self) -> str:
        """The `vocab.txt` of this vocabulary (Hugging Face and Google's BERT read it)."""
        return "".join(t + "\n" for t in self.tokens())

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, continuations joined, special tokens skipped."""
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)
