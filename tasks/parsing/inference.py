"""Loading a trained parser for the parse and evaluate CLIs, and the options they share."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import VOCAB_ARTIFACT, Vocab
from tasks.parsing.model import build_model
from zoo.config import UserError
from zoo.train import Trained, load_trained


@dataclass
class TrainedParserOptions:
    """What every CLI that runs a trained parser asks (the positional RUN fills `run`)."""

    run: str = field(default="", metadata={"help": "run directory of tasks.parsing.train, or a checkpoint file"})
    checkpoint: str = field(default="best", metadata={
        "help": "best | last | averaged (python -m zoo.train.average RUN) | a checkpoint file"})
    beam_size: int = field(default=0, metadata={"help": "seq2seq beam width (0 = the recipe's decode.beam_size)"})
    device: str = field(default="cpu", metadata={"help": "cpu | cuda"})
    precision: str = field(default="", metadata={"help": "fp32 | bf16 ('' = as the run trained)"})
    threads: int = field(default=0, metadata={"help": "CPU threads for torch (0 = torch's default)"})


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
