"""Loading a trained model for the evaluate and translate CLIs."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tasks.translation.config import TranslationConfig
from zoo.models import build_model
from tasks.translation.tokenizer import PAD_ID, Tokenizer
from zoo.config import UserError, from_yaml
from zoo.train.checkpoint import load_checkpoint, step_checkpoints


@dataclass
class Loaded:
    model: nn.Module
    cfg: TranslationConfig
    tokenizer: Tokenizer
    checkpoint: Path


def model_arguments(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The arguments every CLI that loads a trained model shares."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("run_dir", help="run directory of tasks.translation.train")
    parser.add_argument("--checkpoint", default="best",
                        help="best | last | averaged (see tasks.translation.average) | a file (default: best)")
    parser.add_argument("--beam-size", type=int, default=None, help="beam width (default: the recipe's decode.beam_size)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda")
    return parser


def resolve_checkpoint(run_dir: Path, which: str) -> Path:
    """`best`, `last`, `averaged` (from tasks.translation.average) or a file path."""
    named = {"best": run_dir / "checkpoints" / "best.pt", "averaged": run_dir / "averaged.pt"}
    if which == "last":
        found = step_checkpoints(run_dir / "checkpoints")
        if not found:
            raise UserError(f"no checkpoints in {run_dir / 'checkpoints'}")
        return found[-1]
    return named.get(which, Path(which))


def load_trained(run_dir: str | Path, which: str = "best", device: str = "cpu") -> Loaded:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"run directory not found: {run_dir}")
    path = resolve_checkpoint(run_dir, which)
    state = load_checkpoint(path)
    if "config" not in state or "model" not in state:
        raise UserError(f"{path}: lacks the 'config' or 'model' entry of a zoo checkpoint")
    cfg = from_yaml(TranslationConfig, state["config"])
    tokenizer = Tokenizer(run_dir / "spm.model")
    model = build_model(cfg.model, tokenizer.vocab_size, tokenizer.vocab_size, PAD_ID)
    model.load_state_dict(state["model"])
    return Loaded(model.to(torch.device(device)).eval(), cfg, tokenizer, path)
