import io
import tarfile
from pathlib import Path

import pytest

from tasks.translation import download
from tasks.translation.config import DataConfig
from tasks.translation.data import TranslationData
from zoo.config import UserError

CORPORA = {  # prefix -> (English, German) lines, the second corpus with one bad UTF-8 byte
    "training/europarl-v7.de-en": (
        ["Resumption of the session", "Thank you."],
        ["Wiederaufnahme der Sitzung", "Danke."],
    ),
    "commoncrawl.de-en": (["Bad \xff byte here", "Home page"], ["Kaputtes Byte", "Startseite"]),
    "training/news-commentary-v9.de-en": (["Gold rises.", "Why?"], ["Gold steigt.", "Warum?"]),
}


def make_archive(path: Path, prefix: str, lines: tuple[list[str], list[str]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for lang, side in zip(("en", "de"), lines):
            data = "".join(f"{line}\n" for line in side).encode("utf-8")
            data = data.replace("\xff".encode(), b"\xff")  # a raw invalid byte, as in Common Crawl
            for name, content in ((f"{prefix}.{lang}", data), (f"{prefix}.fr", b"ignored\n")):
                info = tarfile.TarInfo(name)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return path


@pytest.fixture
def fake_remote(tmp_path, monkeypatch):
    """The three statmt.org archives as file:// URLs and sacreBLEU's test sets as local files."""
    remote = tmp_path / "remote"
    remote.mkdir()
    corpora = [
        (make_archive(remote / f"{i}.tgz", prefix, lines).as_uri(), prefix)
        for i, (prefix, lines) in enumerate(CORPORA.items())
    ]
    monkeypatch.setattr(download, "TRAIN_CORPORA", corpora)
    tests = {}
    for test_set in download.TEST_SETS.values():
        stem = remote / test_set.replace("/", "_")
        stem.with_suffix(".en").write_text(f"Source of {test_set}.\nSecond line.\n")
        stem.with_suffix(".de").write_text(f"Referenz von {test_set}.\nZweite Zeile.\n")
        tests[test_set] = stem
    monkeypatch.setattr(
        download.sacrebleu_utils,
        "get_source_file",
        lambda test_set, pair: str(tests[test_set].with_suffix("." + pair[:2])),
    )
    monkeypatch.setattr(
        download.sacrebleu_utils,
        "get_reference_files",
        lambda test_set, pair: [str(tests[test_set].with_suffix("." + pair[3:]))],
    )
    return corpora


def test_prepare_writes_the_layout_the_reader_reads(tmp_path, fake_remote):
    data_dir = tmp_path / "data"
    assert download.main(["--data-dir", str(data_dir)]) is None
    out = data_dir / "wmt14"
    english = [line for en, _ in CORPORA.values() for line in en]
    assert (out / "train.en").read_text(encoding="utf-8").splitlines() == [
        line.replace("\xff", "\ufffd") for line in english
    ]
    assert (out / "train.de").read_text().splitlines() == [line for _, de in CORPORA.values() for line in de]
    assert (out / "newstest2014.en").read_text().splitlines() == ["Source of wmt14/full.", "Second line."]
    assert (out / "newstest2013.de").read_text().splitlines()[0] == "Referenz von wmt13."
    assert not (out / "archives").exists() or not any((out / "archives").iterdir())
    assert not list(out.glob("*.part"))

    data = TranslationData(
        DataConfig(source="wmt14", data_dir=str(data_dir), vocab_size=60), tmp_path / "run"
    )
    assert len(data.train) == 6 and len(data.test) == 2
    assert data.valid.sources == ["Source of wmt13.", "Second line."]
    assert data.test.references[0] == "Referenz von wmt14/full."


def test_finished_training_files_are_not_downloaded_again(tmp_path, fake_remote, monkeypatch):
    download.prepare(tmp_path, keep_archives=True)
    assert sorted(p.name for p in (tmp_path / "wmt14" / "archives").iterdir()) == ["0.tgz", "1.tgz", "2.tgz"]
    monkeypatch.setattr(download, "fetch", lambda *a, **k: pytest.fail("downloaded again"))
    download.prepare(tmp_path)


def test_broken_archive_and_missing_member_are_user_errors(tmp_path, fake_remote, monkeypatch):
    archive = Path(fake_remote[0][0][len("file://") :])
    archive.write_bytes(archive.read_bytes()[:40])  # truncated
    with pytest.raises(UserError, match="unreadable archive"):
        download.prepare(tmp_path)
    monkeypatch.setattr(download, "TRAIN_CORPORA", [(fake_remote[1][0], "no/such.de-en")])
    with pytest.raises(UserError, match="has no no/such.de-en.en"):
        download.prepare(tmp_path / "other")
    assert not list((tmp_path / "other" / "wmt14").glob("train.*"))


def test_cli_needs_a_data_dir(monkeypatch, capsys):
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        download.main([])
    assert exit_info.value.code == 2 and "--data-dir" in capsys.readouterr().err
