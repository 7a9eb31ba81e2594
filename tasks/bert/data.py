"""The documents, the tokenizer and the examples of a BERT pretraining recipe."""

from __future__ import annotations

import logging
from pathlib import Path

from tasks.bert.config import SOURCES, DataConfig
from tasks.bert.examples import PretrainingExamples, TokenizedCorpus
from zoo.config import UserError
from zoo.data.corpus_split import split_files, synthetic_split
from zoo.data.documents import Document, read_documents
from zoo.data.paths import write_atomic
from zoo.data.wordpiece import WordPieceTokenizer

log = logging.getLogger(__name__)
TOKENIZER_FILE = "tokenizer.json"
# Held-out examples are drawn with a fixed seed, so runs with different seeds are scored on the
# very same pairs and masks.
EVAL_SEED = 0


def load_documents(cfg: DataConfig, split: str) -> list[Document]:
    """The training or validation documents of the recipe (`split`: train | valid), or for the
    built-in corpus its test documents too (as many as the held-out ones, generated after them)."""
    if cfg.source not in SOURCES:
        raise UserError(f"key 'data.source': {cfg.source!r} is not one of {SOURCES}")
    if cfg.source == "synthetic":
        return synthetic_split(cfg, split)
    if split == "test":
        raise UserError(f"data.source={cfg.source} has no test documents of its own (WikiText is scored)")
    files = split_files(cfg, split)
    documents, counts = read_documents(files, cfg.source, min_paragraph_words=cfg.min_paragraph_words)
    log.info("%s documents: %s", split, counts.describe())
    if not documents:
        raise UserError(f"no {split} documents in {[str(f) for f in files]}")
    return documents


def make_examples(
    documents: list[Document], tokenizer: WordPieceTokenizer, cfg: DataConfig, *, seed: int
) -> PretrainingExamples:
    """Pretraining examples of `documents` as the recipe's data section says."""
    return PretrainingExamples(
        TokenizedCorpus.encode(documents, tokenizer),
        tokenizer,
        max_seq_length=cfg.max_seq_length,
        short_seq_prob=cfg.short_seq_prob,
        masked_lm_prob=cfg.masked_lm_prob,
        max_predictions_per_seq=cfg.max_predictions_per_seq,
        whole_word_mask=cfg.whole_word_mask,
        seed=seed,
    )


def tokenizer_for(cfg: DataConfig, run_dir: Path, documents: list[Document]) -> WordPieceTokenizer:
    """The run's tokenizer: the run's own file when it exists (a resumed run), else the named
    vocab.txt, else (the built-in corpus) its whole words, else WordPiece trained on `documents`
    (then saved in the run)."""
    saved = run_dir / TOKENIZER_FILE
    if saved.is_file():
        return WordPieceTokenizer.from_json_file(saved)
    if cfg.tokenizer:
        try:
            tokenizer = WordPieceTokenizer.load(cfg.tokenizer, lowercase=cfg.lowercase)
        except UserError as err:
            raise UserError(f"key 'data.tokenizer': {err}") from None
    elif cfg.source == "synthetic":  # a closed vocabulary: every word, the same in every run
        tokenizer = WordPieceTokenizer.whole_words(
            (s for d in documents for s in d.sentences), lowercase=cfg.lowercase
        )
    else:
        tokenizer = WordPieceTokenizer.train(
            (s for d in documents for s in d.sentences), vocab_size=cfg.vocab_size, lowercase=cfg.lowercase
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(saved, tokenizer.to_bytes())
    return tokenizer
