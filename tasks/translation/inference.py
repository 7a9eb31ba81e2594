"""Loading a trained translation model for the evaluate and translate CLIs, and the options
they share."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tasks.translation.config import TranslationConfig
from tasks.translation.task import TOKENIZER_ARTIFACT, build_translation_model
from zoo.config import Invalid, UserError
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.train import Trained, load_trained
from zoo.train.options import InferenceOptions


@dataclass
class TrainedModelOptions(InferenceOptions):
    """What every translation CLI that runs a trained model asks."""

    beam_size: int = field(default=0, metadata={"help": "beam width (0 = the recipe's decode.beam_size)"})
    patience: float | None = field(
        default=None, metadata={"help": "beam search's patience (see decode.patience; default: the recipe's)"}
    )

    def check(self) -> None:
        super().check()
        if self.beam_size < 0:
            raise Invalid("beam_size", f"must be at least 0 (0 = the recipe's), not {self.beam_size}")
        if self.patience is not None and self.patience < 0:
            raise Invalid(
                "patience", f"must be at least 0 (0 = the exact stopping rule), not {self.patience}"
            )


@dataclass
class Translator:
    model: nn.Module
    tokenizer: SentencePieceTokenizer
    trained: Trained[TranslationConfig]

    @property
    def cfg(self) -> TranslationConfig:
        return self.trained.cfg


def load_translator(options: TrainedModelOptions, overrides: list[str] | None = None) -> Translator:
    """The model (EMA weights when the run kept them) and the vocabulary saved in its checkpoint;
    runs older than checkpoint artifacts fall back to RUN/spm.model.

    Args:
        options: the CLI's options.
        overrides: dotted overrides of the saved recipe (data, decode).
    """
    trained = load_trained(options.run, TranslationConfig, which=options.checkpoint, overrides=overrides)
    if TOKENIZER_ARTIFACT in trained.artifacts:
        tokenizer = SentencePieceTokenizer(
            trained.artifacts[TOKENIZER_ARTIFACT], origin=f"{TOKENIZER_ARTIFACT} inside {trained.path}"
        )
    else:
        tokenizer = SentencePieceTokenizer.load(trained.run_dir / TOKENIZER_ARTIFACT)
    if options.beam_size:
        trained.cfg.decode.beam_size = options.beam_size
    if options.patience is not None:
        trained.cfg.decode.patience = options.patience
    model = trained.load_into(build_translation_model(trained.cfg, tokenizer))
    return Translator(model.to(torch.device(options.device)), tokenizer, trained)


def check_writable(path: str, option: str) -> None:
    """Fail before any decoding when the file an option names cannot be written there."""
    if not path:
        return
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        raise UserError(f"--{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UserError(f"--{option} {path}: folder {folder} is not writable")


def precision_of(options: TrainedModelOptions, translator: Translator) -> str:
    return options.precision or translator.cfg.train.precision
