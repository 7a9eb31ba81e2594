"""python -m tasks.parsing.silver RUN --input PATH --output FILE [--ensemble RUN1:RUN2] [--option=value ...]

Self-training data: parses unlabeled text with a trained parser (or an ensemble of parsers
of one kind) and writes the trees in PTB bracketed format, one per line, for a next parser's
`data.extra_train` (McClosky et al., 2006; the student learns the ensemble's decisions and the
sentences' words). The text is split into sentences as BERT pretraining splits it
(zoo.data.documents: Bling Fire, markup and headings dropped) and tokenised as `parse` does;
sentences outside --min_words..--max_words words and repeated sentences are skipped. The parser
is loaded as the verbs load it (tasks.parsing.spec) and the options are theirs where they mean
the same (--output, --limit, --threads, --device, --checkpoint, --ensemble, ...).

    python -m tasks.parsing.silver runs/parser --input ../shared/data/enwiki-extract --output runs/silver.mrg
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from tasks.parsing.data import treebank_tokens
from tasks.parsing.parsers import parser_for
from tasks.parsing.spec import LoadedParser, ParsingOptions, load_runs, one_line
from tasks.parsing.task import parse, too_long
from zoo.atomic import atomic_open
from zoo.cli import main_guard
from zoo.config import Invalid, UserError, parse_cli
from zoo.data.documents import FORMATS, read_documents, wiki_files
from zoo.train import evaluation
from zoo.verbs.commands import renamed
from zoo.verbs.io import check_writable

CHUNK = 1000  # sentences per call of the parser: progress, and memory bounded
RENAMED = {"out": "output", "sentences": "limit"}


@dataclass
class SilverOptions(ParsingOptions):
    """The parsing verbs' options, with silver's meanings of input, output, limit and format."""

    input: str = field(
        default="", metadata={"help": "text to parse: a file, or a folder of WikiExtractor files (wiki_NN)"}
    )
    format: str = field(
        default="wikiextractor", metadata={"help": f"the input's format: {' | '.join(FORMATS)}"}
    )
    output: str = field(
        default="", metadata={"help": "the tree file to write (PTB brackets, one tree per line)"}
    )
    limit: int = field(default=20000, metadata={"help": "parse the first N sentences that qualify"})
    min_words: int = field(default=5, metadata={"help": "skip sentences with fewer words"})
    max_words: int = field(default=40, metadata={"help": "skip sentences with more words"})

    def check(self) -> None:
        super().check()
        for key in ("input", "output"):
            if not getattr(self, key):
                raise Invalid(key, "required")
        if self.limit < 1 or self.min_words < 1 or self.max_words < self.min_words:
            raise Invalid("limit", "need limit >= 1 and 1 <= min_words <= max_words")
        check_writable(self.output, "output")


def unlabeled_sentences(options: SilverOptions, parser: LoadedParser) -> Iterator[list[str]]:
    """Tokenised sentences of the input that qualify (and that the parser can read), each
    once, in reading order."""
    path = Path(options.input)
    if not path.exists():
        raise UserError(f"--input: {path} does not exist")
    files = wiki_files(path) if path.is_dir() else [path]
    seen: set[tuple[str, ...]] = set()
    for file in files:  # a file at a time: the first N sentences need not read the whole corpus
        documents, _ = read_documents([file], options.format)
        for document in documents:
            for sentence in document.sentences:
                words = treebank_tokens(sentence)
                if (
                    options.min_words <= len(words) <= options.max_words
                    and tuple(words) not in seen
                    and not too_long(words, parser.cfg, parser.vocab)
                ):
                    seen.add(tuple(words))
                    yield words


@main_guard
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parse_cli(SilverOptions, renamed(argv, RENAMED), default_config=None, description=__doc__,
                        positional=("run",), recipe=False)  # fmt: skip
    if not options.run:
        raise UserError("name a run directory or checkpoint file: python -m tasks.parsing.silver RUN ...")
    if options.threads:
        torch.set_num_threads(options.threads)
    parser = load_runs(options)
    if not parser_for(parser.cfg).predicts_tags:
        raise UserError(
            f"{options.run}: a {parser.cfg.model.kind} parser; silver trees need the part-of-speech "
            "tags only the chart parser predicts"
        )
    sentences = itertools.islice(unlabeled_sentences(options, parser), options.limit)
    written = 0
    with (
        atomic_open(options.output) as out,
        tqdm(total=options.limit, unit="sentence", file=sys.stderr) as bar,
    ):
        while chunk := list(itertools.islice(sentences, CHUNK)):
            with evaluation(parser.model, parser.precision) as model:
                trees = parse(model, parser.vocab, chunk, parser.cfg)
            out.write("".join(one_line(t) + "\n" for t in trees).encode())
            written += len(chunk)
            bar.update(len(chunk))
    print(f"wrote {written:,} trees to {options.output}", file=sys.stderr)
    return written


if __name__ == "__main__":
    main()
