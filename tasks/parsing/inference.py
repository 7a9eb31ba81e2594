"""Loading a trained parser for the parse and evaluate CLIs, and the options they share."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import VOCAB_ARTIFACT, Vocab
from tasks.parsing.model import ChartEnsemble, build_model
from zoo.config import Invalid, UserError
from zoo.train import Trained, load_trained
from zoo.train.options import InferenceOptions


@dataclass
class TrainedParserOptions(InferenceOptions):
    """What every CLI that runs a trained parser asks."""

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
        super().check()
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
    with `options.ensemble`, a ChartEnsemble of RUN's parser and those runs'."""
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
        if len(members) > 1 and member.cfg.model.kind != "chart":
            raise UserError(
                f"--ensemble: {member.path} holds a {member.cfg.model.kind} parser; "
                "ensembles are of chart parsers only"
            )
        if _vocab_json(member) != _vocab_json(trained):
            raise UserError(
                f"--ensemble: {member.path} was trained with another treebank vocabulary than "
                f"{trained.path} (another training set or BERT)"
            )
        models.append(member.load_into(build_model(member.cfg.model, vocab)))
    # The ensemble parses what every member can (sentences longer are reported, left unparsed).
    trained.cfg.model.max_len = min(m.cfg.model.max_len for m in members)
    model = models[0] if len(models) == 1 else ChartEnsemble(models)
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
