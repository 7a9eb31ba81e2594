"""Download and prepare WMT14 English-German: `python -m tasks.translation.download --data-dir DIR`.

Writes DIR/wmt14/{train,newstest2013,newstest2014}.{en,de}: plain UTF-8 text, one untokenised
sentence per line, the layout `data.source=wmt14` reads.

- train: the paper's 4.5M sentence pairs, the WMT14 constrained English-German training data as
  fairseq's prepare-wmt14en2de.sh assembles it: Europarl v7, Common Crawl and News Commentary v9,
  from the statmt.org tarballs (about 1.5 GB in all; the archives are deleted afterwards unless
  --keep-archives). Raw text rather than the Stanford NLP preprocessed files, because those are
  Moses-tokenised and BLEU is reported on detokenised text with sacreBLEU. Invalid UTF-8 bytes
  (a few in Common Crawl) become U+FFFD.
- newstest2013 (validation) and newstest2014 (test): through sacreBLEU's own test-set download
  (`wmt13` and `wmt14/full`, the 3003-sentence newstest2014 that the paper and fairseq score on),
  which checks its archives' MD5 sums, so `sacrebleu -t wmt14/full -l en-de` scores the same
  references.

statmt.org publishes no checksums for the training archives: each download is checked against
the size the server announces, resumes after an interruption, and the tar reader rejects a
truncated archive.
"""

from __future__ import annotations

import argparse
import logging
import os
import tarfile
from collections.abc import Iterable, Iterator
from itertools import zip_longest
from pathlib import Path

from sacrebleu import utils as sacrebleu_utils

from zoo.cli import main_guard
from zoo.config import UserError
from zoo.data.fetch import fetch
from zoo.data.paths import resolve_data_dir
from zoo.data.text import read_lines

log = logging.getLogger(__name__)

# (archive URL, path of the de-en corpus inside it without the language suffix), in the order
# their lines are concatenated into train.{en,de}
TRAIN_CORPORA = [
    ("https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en"),
    ("https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz", "commoncrawl.de-en"),
    ("https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en"),
]
# our split name -> sacreBLEU test set (en-de: English source, German reference)
TEST_SETS = {"newstest2013": "wmt13", "newstest2014": "wmt14/full"}
LANGS = ("en", "de")


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    """Write lines atomically; return how many."""
    tmp = path.with_name(path.name + ".part")
    count = 0
    with open(tmp, "w", encoding="utf-8", newline="\n") as out:
        for count, line in enumerate(lines, start=1):  # noqa: B007 (the count is returned)
            out.write(line + "\n")
    os.replace(tmp, path)
    return count


def _tar_lines(archive: Path, member: str) -> Iterator[str]:
    """Lines of one file inside a .tgz, streamed; only "\\n" ends a line, bad UTF-8 becomes U+FFFD."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            try:
                f = tar.extractfile(member)
            except KeyError:
                raise UserError(f"{archive}: has no {member}") from None
            for raw in f:
                yield raw.decode("utf-8", errors="replace").strip()
    except (tarfile.TarError, EOFError, OSError) as err:
        raise UserError(f"{archive}: unreadable archive ({err}); delete it to download again") from None


def _corpus_pairs(archive: Path, prefix: str) -> Iterator[tuple[str, str]]:
    en, de = (_tar_lines(archive, f"{prefix}.{lang}") for lang in LANGS)
    for number, (src, tgt) in enumerate(zip_longest(en, de), start=1):
        if src is None or tgt is None:
            raise UserError(f"{archive}: {prefix}.en and {prefix}.de differ in length (line {number})")
        yield src, tgt


def prepare_train(out: Path, archives: Path, *, keep_archives: bool = False) -> int:
    """Download the training archives and join their de-en corpora into train.{en,de}."""
    paths = [fetch(url, archives / url.rsplit("/", 1)[1]) for url, _ in TRAIN_CORPORA]
    tmp = {lang: out / f"train.{lang}.part" for lang in LANGS}
    count = 0
    try:
        with open(tmp["en"], "w", encoding="utf-8") as en, open(tmp["de"], "w", encoding="utf-8") as de:
            for path, (_, prefix) in zip(paths, TRAIN_CORPORA):
                # the count runs on across corpora and is read after the loop
                for count, (src, tgt) in enumerate(_corpus_pairs(path, prefix), start=count + 1):  # noqa: B007, B020
                    en.write(src + "\n")
                    de.write(tgt + "\n")
                log.info("%s: %d pairs so far", prefix, count)
    except BaseException:
        for part in tmp.values():
            part.unlink(missing_ok=True)
        raise
    for lang in LANGS:
        os.replace(tmp[lang], out / f"train.{lang}")
    if not keep_archives:
        for path in paths:
            path.unlink()
    return count


def prepare_test_sets(out: Path) -> dict[str, int]:
    """newstest2013 and newstest2014 from sacreBLEU, as {split}.{en,de}."""
    counts = {}
    for split, test_set in TEST_SETS.items():
        source = Path(sacrebleu_utils.get_source_file(test_set, "en-de"))
        reference = Path(sacrebleu_utils.get_reference_files(test_set, "en-de")[0])
        counts[split] = _write_lines(out / f"{split}.en", read_lines(source))
        if _write_lines(out / f"{split}.de", read_lines(reference)) != counts[split]:
            raise UserError(f"{test_set}: source and reference differ in length")
    return counts


def prepare(data_dir: Path, *, keep_archives: bool = False) -> Path:
    """Everything `data.source=wmt14` needs, under DATA_DIR/wmt14; finished files are kept."""
    out = data_dir / "wmt14"
    out.mkdir(parents=True, exist_ok=True)
    if all((out / f"train.{lang}").is_file() for lang in LANGS):
        log.info("%s: train.en and train.de already there", out)
    else:
        log.info("train: %d pairs", prepare_train(out, out / "archives", keep_archives=keep_archives))
    for split, count in prepare_test_sets(out).items():
        log.info("%s: %d pairs", split, count)
    return out


@main_guard
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.translation.download",
        description="Download WMT14 English-German (training corpora from statmt.org, newstest2013 "
        "and newstest2014 through sacreBLEU) into DATA_DIR/wmt14.",
    )
    parser.add_argument(
        "--data-dir", default=None, help="data directory (default: $ZOO_DATA_DIR); wmt14/ is created inside"
    )
    parser.add_argument(
        "--keep-archives",
        action="store_true",
        help="keep the downloaded .tgz archives (about 1.5 GB) after extraction",
    )
    args = parser.parse_args(argv)
    data_dir = Path(args.data_dir) if args.data_dir else resolve_data_dir(None)
    if data_dir is None:
        raise UserError("say where the data goes: --data-dir DIR or ZOO_DATA_DIR")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(f"WMT14 en-de ready in {prepare(data_dir, keep_archives=args.keep_archives)}")


if __name__ == "__main__":
    main()
