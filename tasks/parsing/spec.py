"""Constituency parsing as the shared verbs see it (zoo.verbs): train, evaluate (EVALB), predict
(alias parse: sentences in, bracketed trees out), attention (the chart parser's span scores, the
seq2seq parser's cross-attention, or the parsed tree), average. One spec serves both parsers:
what differs is picked by the run's `model.kind` (tasks.parsing.parsers). Parsers of one kind
ensemble (`--ensemble RUN2:RUN3`: a chart parser's span scores and tag log-probabilities averaged, a
seq2seq parser's next-symbol probabilities). No export format."""

from __future__ import annotations

import io
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from nltk import Tree

from tasks.parsing.chart.batches import chart_input
from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import VOCAB_ARTIFACT, Vocab, load_treebank, treebank_tokens
from tasks.parsing.draw import plot_span_scores, plot_tree
from tasks.parsing.evalb import report
from tasks.parsing.linearize import linearize
from tasks.parsing.parsers import build_model, parser_for
from tasks.parsing.task import ParsingTask, parse, score_trees
from zoo.config import Invalid, UserError
from zoo.data.special import SPECIAL_IDS
from zoo.plot import plot_cross_attention
from zoo.train import FitResult, Trained, evaluation, load_trained
from zoo.verbs import Evaluation, Loaded, TaskSpec, Unsupported, VerbOptions
from zoo.verbs.io import check_writable

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs/parsing/default.yaml"
SAMPLE = "The man saw the dog with the telescope ."
TREEBANK_SPLITS = {"train": "train", "valid": "dev", "test": "test"}  # the shared name -> the treebank's
PICTURES = ("", "scores", "attention", "tree")

NEXT_STEPS = f"""
Parse, score or draw with the run directory:
  echo "{SAMPLE}" | python -m zoo parse parsing {{run}} --pretty
  python -m zoo evaluate parsing {{run}} --split test --output test.pred.mrg
  echo "{SAMPLE}" | python -m zoo attention parsing {{run}} --output picture.png
Real data (the data directory holds ptb-sample/ as in ../shared/data; set ZOO_DATA_DIR or data.data_dir):
  python -m zoo train parsing --config configs/parsing/ptb_sample_chart.yaml --data.data_dir=../shared/data
  python -m zoo train parsing --config configs/parsing/ptb_sample_seq2seq.yaml --data.data_dir=../shared/data
The full WSJ treebank (sections 02-21 train, 22 dev, 23 test):
  python -m zoo train parsing --config configs/parsing/wsj_seq2seq.yaml --data.path=/path/to/wsj"""


@dataclass
class ParsingOptions(VerbOptions):
    """The shared options, plus the parser's: beam, batching, tokenisation, output and pictures."""

    beam_size: int = field(
        default=0, metadata={"help": "seq2seq beam width (0 = the recipe's decode.beam_size)"}
    )
    max_tokens: int = field(
        default=0,
        metadata={
            "help": "words per parsing batch (0 = the recipe's decode.max_tokens, else data.max_tokens)"
        },
    )
    pretokenized: bool = field(
        default=False,
        metadata={
            "help": "predict, attention: split lines on spaces only (default: tokenised as the Penn "
            'Treebank is, nltk\'s Treebank tokenizer: "don\'t" -> "do n\'t", final period split off)'
        },
    )
    pretty: bool = field(
        default=False, metadata={"help": "predict: draw each tree as text art instead of one line"}
    )
    picture: str = field(
        default="",
        metadata={
            "help": "attention: scores (chart parser: the best label score of every span) | attention "
            "(seq2seq parser: cross-attention, decoder layers x heads, tree symbols against words) | "
            "tree (the parsed tree, either parser) ('' = scores for chart, attention for seq2seq)"
        },
    )
    gold: str = field(
        default="",
        metadata={
            "help": "evaluate: also write the split's gold trees to this file (PTB brackets, one a line)"
        },
    )

    def check(self) -> None:
        super().check()
        for key in ("beam_size", "max_tokens"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0 (0 = the recipe's), not {getattr(self, key)}")
        if self.batch_size:
            raise Invalid("batch_size", "parsing batches by words: use --max_tokens")
        if self.picture not in PICTURES:
            raise Invalid("picture", f"must be one of {', '.join(PICTURES[1:])} ('' = the parser's own)")
        check_writable(self.gold, "gold")


@dataclass
class LoadedParser(Loaded):
    vocab: Vocab
    members: list[Trained[ParsingConfig]]  # every checkpoint the model holds, RUN's first
    cfg: ParsingConfig  # RUN's recipe with the options' changes (a copy: config is data)

    def parse(self, sentences: list[list[str]], **kwargs) -> list[Tree]:
        """Trees for tokenised sentences (under zoo.train.evaluation, as the verbs run it)."""
        return parse(self.model, self.vocab, sentences, self.cfg, **kwargs)


def one_line(tree: Tree) -> str:
    return tree.pformat(margin=sys.maxsize)


def write_trees(trees: list[Tree], path: str | Path) -> Path:
    """Trees in PTB bracketed format, one a line (what any external scorer, EVALB itself, reads)."""
    Path(path).write_text("".join(one_line(t) + "\n" for t in trees), encoding="utf-8")
    return Path(path)


def vocab_json(trained: Trained[ParsingConfig]) -> bytes:
    if VOCAB_ARTIFACT not in trained.artifacts:
        raise UserError(
            f"{trained.path}: no {VOCAB_ARTIFACT} inside: not a checkpoint of python -m zoo train parsing"
        )
    return trained.artifacts[VOCAB_ARTIFACT]


class ParsingSpec(TaskSpec):
    name = "parsing"
    description = "constituency parsing: a chart parser or the paper's seq2seq parser, scored with EVALB"
    config = ParsingConfig
    default_recipe = str(DEFAULT_RECIPE) if DEFAULT_RECIPE.is_file() else None
    options = ParsingOptions
    predict_alias = "parse"
    ensemble = True  # parsers of one kind (checked at load)

    # train
    def runner_task(self, cfg: ParsingConfig) -> ParsingTask:
        return ParsingTask(cfg)

    def after_training(self, cfg: ParsingConfig, task: ParsingTask, result: FitResult) -> None:
        """EVALB on the test trees: the report, RUN/test.json and the next steps."""
        with evaluation(result.model, result.run.precision) as model:
            scored, _ = score_trees(model, task.vocab, task.treebank["test"], cfg)
        metrics = scored.metrics(tags=task.parser.predicts_tags)
        record = {"step": result.step, **metrics}
        (result.run_dir / "test.json").write_text(json.dumps(record, indent=2) + "\n")
        print(report(scored).split("\n-- len")[0])
        beam_size = task.parser.beam_size(cfg)
        beam = f", beam {beam_size}" if beam_size else ""
        print(
            f"\ntest ({cfg.data.source}, {len(task.treebank['test'])} trees, {cfg.model.kind} parser{beam}): "
            f"labeled F1 {metrics['f1']:.2f}, exact match {metrics['exact']:.2f}"
        )
        print(NEXT_STEPS.format(run=result.run_dir))

    # load
    def load(self, trained: list[Trained[ParsingConfig]], options: ParsingOptions) -> LoadedParser:
        """The model (EMA weights when the run kept them) and the vocabulary saved in its
        checkpoint; with several runs, their parsers as one (chart parsers: span scores and tag
        probabilities averaged; seq2seq parsers: next-symbol probabilities averaged, one search).
        Weights saved under older names are renamed first."""
        first = trained[0]
        vocab = Vocab.from_json(vocab_json(first))
        models = []
        for member in trained:
            parser = parser_for(member.cfg)
            if member.cfg.model.kind != first.cfg.model.kind:
                raise Unsupported(
                    f"--ensemble: {member.path} holds a {member.cfg.model.kind} parser, {first.path} a "
                    f"{first.cfg.model.kind} one; an ensemble's members are parsers of one kind"
                )
            if vocab_json(member) != vocab_json(first):
                raise UserError(
                    f"--ensemble: {member.path} was trained with another treebank vocabulary than "
                    f"{first.path} (another training set or BERT)"
                )
            member.weights = parser.rename_old_keys(member.weights)
            models.append(member.load_into(build_model(member.cfg, vocab)))
        changes = {"beam_size": options.beam_size, "max_tokens": options.max_tokens}
        decode = replace(first.cfg.decode, **{key: value for key, value in changes.items() if value})
        # The ensemble parses what every member can (sentences longer are reported, left unparsed).
        model_cfg = replace(first.cfg.model, max_len=min(m.cfg.model.max_len for m in trained))
        cfg = replace(first.cfg, decode=decode, model=model_cfg)
        model = models[0] if len(models) == 1 else parser_for(cfg).ensemble(models)
        precision = options.precision or cfg.train.precision
        device = torch.device(options.device)
        return LoadedParser(model.to(device), first, precision, vocab, list(trained), cfg)

    # evaluate
    def evaluate(self, loaded: LoadedParser, options: ParsingOptions) -> Evaluation:
        cfg, parser = loaded.cfg, parser_for(loaded.cfg)
        gold = load_treebank(cfg.data)[TREEBANK_SPLITS[options.split]]
        gold = gold[: options.limit] if options.limit else gold
        started = time.perf_counter()
        scored, predicted = score_trees(loaded.model, loaded.vocab, gold, cfg)
        seconds = time.perf_counter() - started
        if options.gold:
            write_trees(gold, options.gold)
        metrics = {
            "kind": cfg.model.kind,
            "sentences": len(gold),
            **scored.metrics(tags=parser.predicts_tags),
            "beam_size": parser.beam_size(cfg),
            "seconds": round(seconds, 2),
            "sentences_per_s": round(len(gold) / max(seconds, 1e-9), 2),
            "device": options.device,
        }
        if len(loaded.members) > 1:  # the checkpoint files (the record's `ensemble` names the runs)
            metrics["members"] = [str(m.path) for m in loaded.members]
        models = " + ".join(str(m.path) for m in loaded.members)
        summary = (
            f"{report(scored)}\n\n{options.split}: labeled F1 {metrics['f1']:.2f}, exact match "
            f"{metrics['exact']:.2f} ({len(gold)} sentences, {scored.error_count()}, "
            f"{metrics['sentences_per_s']:.1f} sentences/s, "
            f"{models})"
        )
        return Evaluation(metrics, summary, [one_line(t) for t in predicted])

    # predict, attention
    def _sentences(self, lines: list[str], options: ParsingOptions) -> list[list[str]]:
        return [line.split() if options.pretokenized else treebank_tokens(line) for line in lines]

    def predict(self, loaded: LoadedParser, lines: list[str], options: ParsingOptions) -> list[str]:
        """One tree per line (a blank line stays blank, so outputs line up with inputs)."""
        sentences = self._sentences(lines, options)
        keep = [k for k, s in enumerate(sentences) if s]
        trees = loaded.parse([sentences[k] for k in keep])
        out = [""] * len(sentences)
        for k, tree in zip(keep, trees):
            out[k] = _pretty(tree) if options.pretty else one_line(tree)
        return out

    def attention(self, loaded: LoadedParser, lines: list[str], output: Path, options: ParsingOptions) -> str:
        kind = loaded.cfg.model.kind
        picture = options.picture or {"chart": "scores", "seq2seq": "attention"}[kind]
        for name, owner in (("scores", "chart"), ("attention", "seq2seq")):
            if picture == name and kind != owner:
                raise Unsupported(
                    f"--picture={name}: only for the {owner} parser; {options.run} holds a {kind} parser"
                )
        words = self._sentences(lines[:1], options)[0]
        if not words:
            raise UserError("attention: the first input line has no words")
        if picture == "scores":
            scores, _ = loaded.model(*chart_input([words], loaded.vocab).model_inputs())
            title = "chart parser: best label score of every span"
            plot_span_scores(scores[0].float().cpu(), words, loaded.vocab.labels, output, title=title)
            return "the span scores of the first sentence (the best label of every span; rows: first word)"
        [tree] = loaded.parse([words])
        print(one_line(tree))
        if picture == "tree":
            plot_tree(tree, output)
            return "the parse tree of the first sentence"
        if tree.label() == "TOP":  # left unparsed: no symbols to attend from
            raise UserError("attention: the first sentence is too long for the model: left unparsed")
        self._plot_attention(loaded, words, tree, output)
        return "the cross-attention of the first sentence (rows: tree symbols per layer, columns: words)"

    def _plot_attention(self, loaded: LoadedParser, words: list[str], tree: Tree, output: Path) -> None:
        """The seq2seq parser's cross-attention while it writes `tree` (teacher-forced)."""
        vocab, device = loaded.vocab, next(loaded.model.parameters()).device
        symbols = linearize(tree)
        src = torch.tensor(vocab.word_ids(words) + [SPECIAL_IDS.eos], device=device)
        hyp = torch.tensor([SPECIAL_IDS.bos] + [vocab.symbol_index[s] for s in symbols], device=device)
        plot_cross_attention(loaded.model, src, hyp, words + ["</s>"], symbols + ["</s>"], output)

    def default_input(self, loaded: Loaded) -> list[str]:
        return [SAMPLE]


def _pretty(tree: Tree) -> str:
    text = io.StringIO()
    tree.pretty_print(stream=text)
    return text.getvalue().rstrip("\n")


def load_runs(options: ParsingOptions) -> LoadedParser:
    """RUN (and the --ensemble runs) through the spec's load, as the verbs load them: for the
    parsing tools outside the verbs (tasks.parsing.silver) and tests."""
    spec = ParsingSpec()
    overrides = spec.recipe_overrides(options)
    runs = [options.run, *options.ensemble_runs]
    trained = [
        load_trained(run, ParsingConfig, which=options.checkpoint, overrides=overrides) for run in runs
    ]
    return spec.load(trained, options)
