"""Loading a trained parser for the parse and evaluate CLIs, and the options they share."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import VOCAB_ARTIFACT, Vocab
from tasks.parsing.model import build_model
from zoo.config import Invalid, UserError
from zoo.train import Trained, load_trained
from zoo.train.options import InferenceOptions


@dataclass
class TrainedParserOptions(InferenceOptions):
    """What every CLI that runs a trained parser asks."""

    beam_size: int = field(default=0, metadata={"help": "seq2seq beam width (0 = the recipe's decode.beam_size)"})
    threads: int = field(default=0, metadata={"help": "CPU threads for torch (0 = torch's default)"})

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

    @property
    def cfg(self) -> ParsingConfig:
        return self.trained.cfg


def load_parser(options: TrainedParserOptions, overrides: list[str] | None = None) -> Parser:
    """The model (EMA weights when the run kept them) and the vocabulary saved in its checkpoint."""
    if not options.run:
        raise UserError("RUN: give the run directory (or a checkpoint file) of tasks.parsing.train")
    if options.threads:
        torch.set_num_threads(options.threads)
    trained = load_trained(options.run, ParsingConfig, which=options.checkpoint, overrides=overrides)
    if VOCAB_ARTIFACT not in trained.artifacts:
        raise UserError(f"{trained.path}: no {VOCAB_ARTIFACT} inside: not a checkpoint of tasks.parsing.train")
    vocab = Vocab.from_json(trained.artifacts[VOCAB_ARTIFACT])
    if options.beam_size:
        trained.cfg.decode.beam_size = options.beam_size
    model = trained.load_into(build_model(trained.cfg.model, vocab))
    return Parser(model.to(torch.device(options.device)), vocab, trained,
                  options.precision or trained.cfg.train.precision)
