"""zoo.data.corpus_split: the splits of a pretraining corpus, as BERT's and GPT's recipes read them."""

import pytest

from zoo.config import UserError
from zoo.data.corpus import synthetic_documents
from zoo.data.corpus_split import CorpusConfig, split_files, synthetic_split


def test_synthetic_splits_are_consecutive_slices_of_one_seeded_stream():
    cfg = CorpusConfig(synthetic_train=5, synthetic_valid=3, synthetic_seed=4)
    stream = [d.sentences for d in synthetic_documents(11, 4)]
    splits = {
        split: [d.sentences for d in synthetic_split(cfg, split)] for split in ("train", "valid", "test")
    }
    assert splits == {"train": stream[:5], "valid": stream[5:8], "test": stream[8:11]}
    with pytest.raises(UserError, match="unknown split 'dev'"):
        synthetic_split(cfg, "dev")


def test_a_wikiextractor_folder_holds_out_the_named_files(tmp_path):
    folder = tmp_path / "wiki"
    folder.mkdir()
    for name in ("wiki_00", "wiki_01", "wiki_02", "notes.txt"):
        (folder / name).write_text("x")
    cfg = CorpusConfig(source="wikiextractor", data_dir=str(tmp_path), path="wiki", valid=["wiki_01"])
    assert [f.name for f in split_files(cfg, "train")] == ["wiki_00", "wiki_02"]
    assert [f.name for f in split_files(cfg, "valid")] == ["wiki_01"]
    cfg.valid = ["wiki_09"]
    with pytest.raises(UserError, match=r"key 'data.valid': \['wiki_09'\] not among the files of"):
        split_files(cfg, "train")
    cfg.path = "missing"
    with pytest.raises(UserError, match=f"WikiExtractor folder not found: {tmp_path / 'missing'}"):
        split_files(cfg, "train")


def test_file_sources_train_on_the_path_and_hold_out_the_valid_files(tmp_path):
    cfg = CorpusConfig(source="text", data_dir=str(tmp_path), path="train.txt", valid=["a.txt", "b.txt"])
    assert split_files(cfg, "train") == [tmp_path / "train.txt"]
    assert split_files(cfg, "valid") == [tmp_path / "a.txt", tmp_path / "b.txt"]
