"""GPT data: documents from every source, one EOT-separated token stream, and token blocks that
are a pure function of (seed, epoch), resume exactly and split evenly across ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tasks.gpt.config import GPTDataConfig
from tasks.gpt.data import LMBatch, TokenBlocks, load_texts, token_stream
from tasks.gpt.task import TOKENIZER_FILE, tokenizer_for
from zoo.config import UserError
from zoo.data.bpe import ByteBPETokenizer
from zoo.data.corpus import synthetic_documents

CONTEXT, BATCH = 8, 3


@pytest.fixture(scope="module")
def tokenizer() -> ByteBPETokenizer:
    return ByteBPETokenizer.train(load_texts(GPTDataConfig(synthetic_train=200), "train"), 300)


@pytest.fixture(scope="module")
def blocks() -> TokenBlocks:
    return TokenBlocks(np.arange(1000, dtype=np.int32), CONTEXT)  # a token's id is its position


def rows(batches) -> list[list[int]]:
    """Each block of the batches as the list of its input ids."""
    return [row for batch in batches for row in batch.ids.tolist()]


def test_batches_are_a_function_of_seed_and_epoch(blocks: TokenBlocks):
    first = list(blocks.batches(1, BATCH, seed=5))
    again = list(TokenBlocks(blocks.stream.copy(), CONTEXT).batches(1, BATCH, seed=5))
    assert rows(first) == rows(again)
    assert rows(first) != rows(blocks.batches(2, BATCH, seed=5))
    assert rows(first) != rows(blocks.batches(1, BATCH, seed=6))
    assert len(first) == blocks.num_batches(1, BATCH, seed=5) > 0
    assert all(isinstance(b, LMBatch) and b.ids.shape == (BATCH, CONTEXT) for b in first)
    assert all(b.ids.dtype == b.targets.dtype == torch.int64 for b in first)


def test_blocks_are_stream_slices_with_targets_shifted_by_one(blocks: TokenBlocks):
    starts = set()
    for batch in blocks.batches(0, BATCH, seed=0):
        assert torch.equal(batch.targets, batch.ids + 1)  # the next position's token
        for row in batch.ids:
            assert torch.equal(row, torch.arange(int(row[0]), int(row[0]) + CONTEXT))
            starts.add(int(row[0]))
    offsets = {start % (CONTEXT + 1) for start in starts}
    assert len(offsets) == 1 and 0 <= offsets.pop() < CONTEXT  # non-overlapping, cut at one offset
    # blocks whose last target is the stream's end or before, and all but a partial batch of them
    assert max(starts) + CONTEXT + 1 <= len(blocks.stream)
    assert len(starts) > (len(blocks.stream) - CONTEXT) // (CONTEXT + 1) - BATCH


def test_epochs_cut_blocks_at_other_offsets(blocks: TokenBlocks):
    offsets = {rows(blocks.batches(epoch, BATCH, seed=0))[0][0] % (CONTEXT + 1) for epoch in range(12)}
    assert len(offsets) > 3


def test_resume_at_start_equals_the_tail_of_the_epoch(blocks: TokenBlocks):
    whole = rows(blocks.batches(3, BATCH, seed=1))
    for start in (0, 1, 7):
        assert rows(blocks.batches(3, BATCH, seed=1, start=start)) == whole[start * BATCH :]
    for rank in (0, 1):
        sharded = rows(blocks.batches(3, BATCH, seed=1, rank=rank, world_size=2))
        assert (
            rows(blocks.batches(3, BATCH, seed=1, start=2, rank=rank, world_size=2)) == sharded[2 * BATCH :]
        )


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_partition_the_epoch(blocks: TokenBlocks, world_size: int):
    whole = [rows([b]) for b in blocks.batches(4, BATCH, seed=2)]
    per_rank = [
        [rows([b]) for b in blocks.batches(4, BATCH, seed=2, rank=r, world_size=world_size)]
        for r in range(world_size)
    ]
    assert {len(batches) for batches in per_rank} == {len(whole) // world_size}
    assert all(per_rank[r] == whole[r::world_size][: len(whole) // world_size] for r in range(world_size))
    seen = [tuple(row) for batches in per_rank for batch in batches for row in batch]
    assert len(seen) == len(set(seen))


def test_too_little_text_for_the_ranks_is_one_line(blocks: TokenBlocks):
    short = TokenBlocks(np.arange(40, dtype=np.int32), CONTEXT)  # 4 blocks at most: one batch
    with pytest.raises(UserError, match="lower data.context or data.batch_size"):
        short.batches(0, BATCH, seed=0, rank=1, world_size=2)


def test_token_stream_ends_every_document_with_eot(tokenizer: ByteBPETokenizer):
    texts = ["the town lies on the river .", "naïve café 😀", "a third one\nwith two lines"]
    stream = token_stream(texts, tokenizer)
    assert stream.dtype == np.int32 and stream[-1] == tokenizer.eot_id
    ends = np.flatnonzero(stream == tokenizer.eot_id)
    pieces = np.split(stream, ends + 1)[:-1]
    assert [tokenizer.decode(piece[:-1].tolist()) for piece in pieces] == texts
    assert len(token_stream([], tokenizer)) == 0


def test_synthetic_texts_are_the_corpus_documents():
    cfg = GPTDataConfig(synthetic_train=30, synthetic_valid=5, synthetic_seed=3)
    documents = synthetic_documents(40, 3)
    split = {s: load_texts(cfg, s) for s in ("train", "valid", "test")}
    assert split["train"] == [" ".join(d.sentences) for d in documents[:30]]
    assert split["valid"] == [" ".join(d.sentences) for d in documents[30:35]]
    assert split["test"] == [" ".join(d.sentences) for d in documents[35:]]


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def text_config(tmp_path: Path, source: str = "text", **kwargs) -> GPTDataConfig:
    return GPTDataConfig(
        source=source, data_dir=str(tmp_path), path="train.txt", valid=["valid.txt"], **kwargs
    )


def test_plain_text_documents_are_separated_by_blank_lines(tmp_path: Path):
    write(tmp_path / "train.txt", "First line.\nSecond line of it.\n\n\nAnother document.\n")
    write(tmp_path / "valid.txt", "Held out.\n")
    cfg = text_config(tmp_path)
    assert load_texts(cfg, "train") == ["First line.\nSecond line of it.", "Another document."]
    assert load_texts(cfg, "valid") == ["Held out."]


WIKI = """<doc id="1" url="u" title="Alpha">
Alpha

Alpha is the first letter of the Greek alphabet, used in many places.
History.
It came from the Phoenician letter aleph, as most scholars agree today.
A formula_3 paragraph with leftover markup is dropped from the text.
</doc>
<doc id="2" url="u" title="Stub">
Stub

Too short.
</doc>
"""


def test_wikiextractor_keeps_paragraphs_whole(tmp_path: Path):
    folder = tmp_path / "wiki"
    folder.mkdir()
    write(folder / "wiki_00", WIKI)
    write(folder / "wiki_01", WIKI.replace("Alpha", "Beta"))
    cfg = GPTDataConfig(source="wikiextractor", data_dir=str(tmp_path), path="wiki", valid=["wiki_01"])
    (train,) = load_texts(cfg, "train")
    assert train == (
        "Alpha\nAlpha is the first letter of the Greek alphabet, used in many places.\n"
        "It came from the Phoenician letter aleph, as most scholars agree today."
    )
    assert [text.split("\n")[0] for text in load_texts(cfg, "valid")] == ["Beta"]
    with pytest.raises(UserError, match=r"\['wiki_09'\] not among"):
        load_texts(
            GPTDataConfig(source="wikiextractor", data_dir=str(tmp_path), path="wiki", valid=["wiki_09"]),
            "train",
        )


def test_wikitext_articles_are_detokenized(tmp_path: Path):
    write(
        tmp_path / "train.txt",
        " \n = Alpha = \n \n Alpha is a ( small ) test @-@ case . \n \n = Beta = \n \n Beta . \n",
    )
    write(tmp_path / "valid.txt", " = Gamma = \n \n It 's <unk> . \n")
    cfg = text_config(tmp_path, "wikitext")
    assert load_texts(cfg, "train") == ["= Alpha =\n\nAlpha is a (small) test-case.", "= Beta =\n\nBeta."]
    assert load_texts(cfg, "valid") == ["= Gamma =\n\nIt's <unk>."]


@pytest.mark.parametrize("source", ["text", "wikitext"])
@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b"\n\n   \n", "no text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        (b"good line\nlatin-1 caf\xe9\n", r":2: not valid UTF-8"),
    ],
)
def test_bad_training_files_are_one_line_naming_the_file(
    tmp_path: Path, source: str, content: bytes, message: str
):
    train = write(tmp_path / "train.txt", content)
    write(tmp_path / "valid.txt", "fine\n")
    with pytest.raises(UserError, match=message) as error:
        load_texts(text_config(tmp_path, source), "train")
    assert str(train) in str(error.value) and "\n" not in str(error.value)


def test_missing_paths_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(UserError, match=f"not found: {tmp_path / 'train.txt'}"):
        load_texts(text_config(tmp_path), "train")
    with pytest.raises(UserError, match=f"WikiExtractor folder not found: {tmp_path / 'wiki'}"):
        load_texts(GPTDataConfig(source="wikiextractor", data_dir=str(tmp_path), path="wiki"), "train")
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    with pytest.raises(UserError, match="needs a data directory"):
        load_texts(GPTDataConfig(source="text", path="train.txt"), "train")
    with pytest.raises(UserError, match="no 'test' documents"):
        load_texts(text_config(tmp_path), "test")


@pytest.mark.data
def test_real_sources_load(data_dir: Path, tokenizer: ByteBPETokenizer):
    wiki = GPTDataConfig(
        source="wikiextractor", data_dir=str(data_dir), path="enwiki-extract", valid=["wiki_29"]
    )
    if not (data_dir / "enwiki-extract").is_dir() or not (data_dir / "wikitext-2").is_dir():
        pytest.skip(f"no enwiki-extract/ or wikitext-2/ in {data_dir}")
    texts = load_texts(wiki, "valid")
    assert len(texts) > 10 and all("\n" in text for text in texts)
    wikitext = GPTDataConfig(
        source="wikitext", data_dir=str(data_dir), path="wikitext-2/valid.txt", valid=["wikitext-2/test.txt"]
    )
    assert (len(load_texts(wikitext, "train")), len(load_texts(wikitext, "valid"))) == (
        60,
        62,
    )  # its README's
    stream = token_stream(texts[:3], tokenizer)
    assert (stream == tokenizer.eot_id).sum() == 3


def test_unk_below_rewrites_every_split_by_the_training_counts(tmp_path: Path):
    write(tmp_path / "train.txt", "A rare word, a common word.\n\nA common word again.\n")
    write(tmp_path / "valid.txt", "A common word, never seen.\n")
    cfg = text_config(tmp_path, unk_below=2)
    # "a" is not "A": case counts, as in WikiText's vocabulary
    assert load_texts(cfg, "train") == ["A <unk> word, <unk> common word.", "A common word <unk>."]
    assert load_texts(cfg, "valid") == ["A common word, <unk> <unk>."]
    assert load_texts(text_config(tmp_path), "valid") == ["A common word, never seen."]


def test_a_named_tokenizer_is_taken_as_is_and_saved_with_the_run(tokenizer: ByteBPETokenizer, tmp_path: Path):
    """data.tokenizer (another run's tokenizer.json, GPT-2's files) replaces training one: the
    run saves those bytes, and a resumed run reads its own copy, whatever data.tokenizer says."""
    named = tmp_path / "named.json"
    named.write_bytes(tokenizer.to_bytes())
    texts = load_texts(GPTDataConfig(synthetic_train=50), "train")
    run = tmp_path / "run"
    taken = tokenizer_for(GPTDataConfig(tokenizer=str(named), vocab_size=1000), run, texts)
    assert taken.to_bytes() == tokenizer.to_bytes() and taken.vocab_size == 300  # not 1000: not trained
    assert (run / TOKENIZER_FILE).read_bytes() == tokenizer.to_bytes()
    named.write_bytes(b"{}")  # a resume never reads data.tokenizer again
    assert tokenizer_for(GPTDataConfig(tokenizer=str(named)), run, texts).to_bytes() == tokenizer.to_bytes()
