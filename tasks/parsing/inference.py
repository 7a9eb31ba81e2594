"""Loading a trained parser for the parse and evaluate CLIs, and the options they share."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import VOCAB_ARTIFACT, Vocab
from tasks.parsing.parsers import build_model, parser_for
from zoo.config import Invalid, UserError
from zoo.train import Trained, load_trained


@dataclass
class TrainedParserOptions:
    """What every CLI that runs a trained parser asks."""

    run: str = field(default="", metadata={"help": "a run directory, or a checkpoint file (required)"})
    checkpoint: str = field(
        default="best",
        metadata={"help": "best | last | averaged (python -m zoo.train.average RUN) | a checkpoint file"},
    )
    device: str = field(default="cpu", metadata={"help": "cpu | cuda | cuda:N"})
    precision: str = field(default="", metadata={"help": "fp32 | bf16 ('' = as the run trained)"})
    beam_size: int = field(
        default=0, metadata={"help": "seq2seq beam width (0 = the recipe's decode.beam_size)"}
    )
    threads: int = field(default=0, metadata={"help": "CPU threads for torch (0 = torch's default)"})
    ensemble: str = field(
        default="",
        metadata={
            "help": "chart parser: more runs or checkpoint files, ':'-separated (as fairseq's --path a:b), "
            "parsing with RUN as one: span scores and tag probabilities averaged (each run's "
            "--checkpoint; all must share RUN's treebank vocabulary)"
        },
    )

    def check(self) -> None:
        if self.precision not in ("", "fp32", "bf16"):
            raise Invalid("precision", f"must be fp32 or bf16, not {self.precision!r}")
        kind, _, index = self.device.partition(":")
        if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
            raise Invalid("device", f"must be cpu, cuda or cuda:N, not {self.device!r}")
        if kind == "cuda" and not torch.cuda.is_available():
            raise Invalid("device", "cuda was asked for but no CUDA device is visible")
        for key in ("beam_size", "threads"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0 (0 = the default), not {getattr(self, key)}")


@dataclass
class Parser:
    model: nn.Module
    vocab: Vocab
    trained: Trained[ParsingConfig]
    precision: str
    members: list[Trained[ParsingConfig]]  # every checkpoint the model holds, RUN's first

    @property
    def cfg(self) -> ParsingConfig:
        return self.trained.cfg


def load_parser(options: TrainedParserOptions, overrides: list[str] | None = None) -> Parser:
    """The model (EMA weights when the run kept them) and the vocabulary saved in its checkpoint;
    with `options.ensemble`, RUN's parser and those runs' as one (chart parsers only).
    Weights saved under older names are renamed first (the parser's `rename_old_keys`)."""
    if not options.run:
        raise UserError("RUN: give the run directory (or a checkpoint file) of tasks.parsing.train")
    if options.threads:
        torch.set_num_threads(options.threads)
    trained = load_trained(options.run, ParsingConfig, which=options.checkpoint, overrides=overrides)
    vocab = Vocab.from_json(_vocab_json(trained))
    if options.beam_size:
        trained.cfg.decode.beam_size = options.beam_size
    members = [trained] + [
        load_trained(run, ParsingConfig, which=options.checkpoint)
        for run in options.ensemble.split(":")
        if run
    ]
    models = []
    for member in members:
        parser = parser_for(member.cfg)
        if len(members) > 1 and parser.ensemble is None:
            raise UserError(
                f"--ensemble: {member.path} holds a {member.cfg.model.kind} parser; "
                "ensembles are of chart parsers only"
            )
        if _vocab_json(member) != _vocab_json(trained):
            raise UserError(
                f"--ensemble: {member.path} was trained with another treebank vocabulary than "
                f"{trained.path} (another training set or BERT)"
            )
        member.weights = parser.rename_old_keys(member.weights)
        models.append(member.load_into(build_model(member.cfg, vocab)))
    # The ensemble parses what every member can (sentences longer are reported, left unparsed).
    trained.cfg.model.max_len = min(m.cfg.model.max_len for m in members)
    model = models[0] if len(models) == 1 else parser_for(trained.cfg).ensemble(models)
    return Parser(
        model.to(torch.device(options.device)),
        vocab,
        trained,
        options.precision or trained.cfg.train.precision,
        members,
    )


def _vocab_json(trained: Trained[ParsingConfig]) -> bytes:
    if VOCAB_ARTIFACT not in trained.artifacts:
        raise UserError(
            f"{trained.path}: no {VOCAB_ARTIFACT} inside: not a checkpoint of tasks.parsing.train"
        )
    return trained.artifacts[VOCAB_ARTIFACT]
