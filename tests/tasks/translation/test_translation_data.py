import gzip
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from tasks.translation.config import DataConfig
from tasks.translation.data import TranslationData, encode_split, load_pairs, split_names
from zoo.config import UserError
from zoo.data.paths import ENV_VAR
from zoo.data.seq2seq import Seq2SeqBatch
from zoo.data.special import SPECIAL_IDS

TINY = DataConfig(
    source="synthetic",
    synthetic_train=400,
    synthetic_valid=30,
    synthetic_test=30,
    vocab_size=300,
    max_tokens=256,
    spm_max_sentences=0,
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("run")


@pytest.fixture(scope="module")
def data(run_dir) -> TranslationData:
    return TranslationData(TINY, run_dir, seed=3)


def test_train_batches_are_the_collated_index_batches(data):
    """Collation itself is tested in tests/zoo/data/test_seq2seq.py; here: each batch is the
    collation of this epoch's index batch, in order, from any start."""
    indices = data.train_batch_indices(1)
    for got, want in zip(data.train_batches(1, start=2), indices[2:]):
        expected = data.train.pairs.collate(want, SPECIAL_IDS)
        assert all(torch.equal(getattr(got, k), getattr(expected, k)) for k in ("src", "tgt_in", "tgt_out"))
        assert got.tgt_tokens == int((got.tgt_out != SPECIAL_IDS.pad).sum())


def test_epoch_covers_every_pair_once_within_budget(data):
    for epoch in range(2):
        seen = np.sort(np.concatenate(data.train_batch_indices(epoch)))
        assert np.array_equal(seen, np.arange(len(data.train)))
        for b in data.train_batches(epoch):
            assert b.src.shape[0] * max(b.src.shape[1], b.tgt_out.shape[1]) <= TINY.max_tokens


def test_order_is_deterministic_and_changes_with_epoch(data):
    def order(epoch):
        return [b.tolist() for b in data.train_batch_indices(epoch)]

    assert order(0) == order(0)
    assert order(0) != order(1)


def test_ranks_get_equal_disjoint_shares(data, run_dir):
    """Rank r takes every third batch of the single-process epoch from the r-th, all ranks as many
    (the last len % 3 batches dropped): together they cover the epoch but for those."""
    whole = [b.tolist() for b in TranslationData(TINY, run_dir, seed=3).train_batch_indices(0)]
    ranks = [TranslationData(TINY, run_dir, seed=3, rank=r, world_size=3) for r in range(3)]
    shares = [[b.tolist() for b in d.train_batch_indices(0)] for d in ranks]
    kept = len(whole) - len(whole) % 3
    assert kept >= 3
    assert shares == [whole[r:kept:3] for r in range(3)]


def test_eval_batches_keep_every_pair_and_decode_to_the_text(data):
    for role in ("valid", "test"):
        split = data.split(role)
        batches = list(data.eval_batches(role, max_tokens=64))
        assert len(split) == TINY.synthetic_valid
        sources = [data.tokenizer.decode(row) for b in batches for row in b.src.tolist()]
        references = [data.tokenizer.decode(row) for b in batches for row in b.tgt_out.tolist()]
        assert sorted(sources) == sorted(split.sources) and sorted(references) == sorted(split.references)
        assert all(b.src.shape[0] * max(b.src.shape[1], b.tgt_out.shape[1]) <= 64 for b in batches)


def test_tokenizer_is_saved_and_reused(data, run_dir, tmp_path):
    saved = run_dir / "spm.model"
    assert saved.read_bytes() == data.tokenizer.model
    again = TranslationData(TINY, run_dir, seed=3)
    assert again.tokenizer.model == data.tokenizer.model
    assert np.array_equal(again.train.pairs.src.flat, data.train.pairs.src.flat)
    given = TranslationData(replace(TINY, tokenizer=str(saved)), tmp_path / "new")
    assert (tmp_path / "new" / "spm.model").read_bytes() == data.tokenizer.model
    assert np.array_equal(given.valid.pairs.tgt.flat, data.valid.pairs.tgt.flat)


def test_reversed_direction_and_max_len_filter(tmp_path, caplog):
    cfg = replace(TINY, src_lang="de", tgt_lang="en", max_len=12)
    forward = dict(load_pairs(TINY, "valid"))
    assert {de: en for en, de in forward.items()} == dict(load_pairs(cfg, "valid"))
    with caplog.at_level(logging.INFO, logger="tasks.translation.data"):
        data = TranslationData(cfg, tmp_path)
    assert max(data.train.pairs.src_lengths.max(), data.train.pairs.tgt_lengths.max()) <= 12
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("train:")]
    dropped = TINY.synthetic_train - len(data.train)
    assert dropped > 0 and f"{len(data.train)} pairs encoded ({dropped} dropped" in line
    assert len(data.valid) == TINY.synthetic_valid  # evaluation splits are never filtered


def write_split(folder: Path, split: str, pairs: list[tuple[str, str]], gz: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, side in (("en", 0), ("de", 1)):
        text = "".join(p[side] + "\n" for p in pairs).encode()
        path = folder / f"{split}.{lang}{'.gz' if gz else ''}"
        path.write_bytes(gzip.compress(text) if gz else text)


@pytest.mark.parametrize(
    "source,folder,names,gz",
    [
        ("multi30k", "multi30k", ("train", "val", "test_2016_flickr"), True),
        ("wmt14", "wmt14", ("train", "newstest2013", "newstest2014"), False),
        ("files", "mine", ("train", "valid", "test"), True),
    ],
)
def test_file_layouts(tmp_path, monkeypatch, source, folder, names, gz):
    pairs = [("A dog runs.", "Ein Hund rennt."), ("The cats sleep.", "Die Katzen schlafen.")] * 20
    for name in names:
        write_split(tmp_path / folder, name, pairs + [("", "leer"), (" ".join("x" * 5), "y")], gz)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    cfg = replace(TINY, source=source, path=folder if source == "files" else "", vocab_size=60, max_words=4)
    assert list(split_names(cfg).values()) == list(names)
    data = TranslationData(cfg, tmp_path / "run")
    assert len(data.train) == len(pairs)  # the empty and the 5-word pair are dropped
    assert len(data.valid) == len(pairs) + 1  # evaluation drops only the empty pair
    assert data.valid.sources[:2] == [p[0] for p in pairs[:2]]


def test_user_errors(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(UserError, match="not one of"):
        split_names(replace(TINY, source="europarl"))
    with pytest.raises(UserError, match="needs the data directory"):
        list(load_pairs(replace(TINY, source="multi30k"), "train"))
    with pytest.raises(UserError, match="multi30k corpus folder not found"):
        list(load_pairs(replace(TINY, source="multi30k", data_dir=str(tmp_path)), "train"))
    with pytest.raises(UserError, match="needs data.path"):
        list(load_pairs(replace(TINY, source="files"), "train"))
    write_split(tmp_path / "c", "train", [("a", "b")], gz=False)
    with pytest.raises(UserError, match=r"'valid' split \(en\) not found: .*valid\.en"):
        load_pairs(replace(TINY, source="files", path=str(tmp_path / "c")), "valid")
    with pytest.raises(UserError, match="synthetic corpus is en-de or de-en"):
        load_pairs(replace(TINY, src_lang="fr"), "train")


@pytest.mark.data
def test_multi30k_from_the_shared_data(data_dir, tmp_path):
    cfg = DataConfig(source="multi30k", data_dir=str(data_dir), vocab_size=2000, spm_max_sentences=5000)
    data = TranslationData(cfg, tmp_path)
    assert len(data.valid) == 1014 and len(data.test) == 1000  # README: nothing is dropped
    assert 28_000 < len(data.train) <= 29_000
    assert data.valid.sources[0] and data.test.references[0]
    batch = next(data.train_batches(0))
    assert isinstance(batch, Seq2SeqBatch)
    assert batch.src.shape[0] * max(batch.src.shape[1], batch.tgt_out.shape[1]) <= cfg.max_tokens
    unk = np.mean(data.valid.pairs.tgt.flat == SPECIAL_IDS.unk)
    assert unk < 0.01


def test_evaluation_pairs_longer_than_the_positions_are_cut_and_counted(data, caplog):
    """Every evaluation pair is kept (the score is on the whole split): sides over the
    position table are cut to it, ending in EOS within it; the text stays whole."""
    long_en, long_de = " ".join(["house"] * 400), " ".join(["Haus"] * 400)
    pairs = [("a man", "ein Mann"), (long_en, "ein Haus"), ("the dog", long_de)]
    with caplog.at_level(logging.WARNING):
        split = encode_split("test", pairs, data.tokenizer, truncate=16, keep_text=True)
    assert "test: 2 of 3 pairs have a side longer than the model's 16 positions" in caplog.text
    assert split.sources == [src for src, _ in pairs] and split.references == [tgt for _, tgt in pairs]
    whole = encode_split("test", pairs, data.tokenizer)
    assert split.pairs.src_lengths.tolist() == [whole.pairs.src_lengths[0], 16, whole.pairs.src_lengths[2]]
    assert split.pairs.tgt_lengths.tolist() == [whole.pairs.tgt_lengths[0], whole.pairs.tgt_lengths[1], 16]
    batch = split.pairs.collate(np.arange(3), SPECIAL_IDS)
    assert batch.src.shape[1] == batch.tgt_in.shape[1] == 16
    assert torch.equal(batch.src[:2, :15], whole.pairs.collate(np.arange(2), SPECIAL_IDS).src[:2, :15])
