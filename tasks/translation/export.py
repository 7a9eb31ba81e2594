"""python -m tasks.translation.export RUN --format ctranslate2 OUT: a trained model for CTranslate2.

CTranslate2 is the inference engine deployers use for Transformer translation models. The export
writes its model directory (model.bin, config.json, the shared vocabulary) plus the run's
SentencePiece model (spm.model), so that

    translator = ctranslate2.Translator(OUT)
    pieces = sentencepiece.SentencePieceProcessor(model_file=f"{OUT}/spm.model").encode(text, out_type=str)
    translator.translate_batch([pieces], beam_size=4, length_penalty=0.6)

translates as `python -m tasks.translation.translate` does (the source EOS is added by the
engine, from the exported config). What maps onto what: post-norm or pre-norm residuals (with the
pre-norm stacks' final norms), LayerNorm or RMSNorm and its epsilon, ReLU or GELU, the position
table itself (sinusoidal or learned: written out, so no layout convention has to agree), the
sqrt(D) embedding scale, and the embeddings shared by source, target and output projection.
Restricted self-attention (model.window) has no CTranslate2 counterpart and is refused.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tasks.translation.inference import TrainedModelOptions, load_translator
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.convert.ctranslate2 import write_ctranslate2
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.models.encoder_decoder import Transformer

FORMATS = ("ctranslate2",)
QUANTIZATIONS = (
    "",
    "int8",
    "int8_float32",
    "int8_float16",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
    "float32",
)


@dataclass
class ExportOptions:
    run: str = field(
        default="", metadata={"help": "run directory of tasks.translation.train, or a checkpoint file"}
    )
    out: str = field(default="", metadata={"help": "output directory (must not exist unless --force)"})
    format: str = field(default="ctranslate2", metadata={"help": "ctranslate2"})
    checkpoint: str = field(
        default="best",
        metadata={"help": "best | last | averaged (python -m zoo.train.average RUN) | a checkpoint file"},
    )
    quantization: str = field(
        default="",
        metadata={
            "help": "CTranslate2 weight type stored on disk ('' = float32; int8, int8_float32, int16, "
            "float16, bfloat16, ...); the engine can still convert at load time"
        },
    )
    force: bool = field(default=False, metadata={"help": "replace an existing output directory"})


def export_ctranslate2(
    model: Transformer,
    tokenizer: SentencePieceTokenizer,
    out: str | Path,
    *,
    quantization: str = "",
    force: bool = False,
) -> Path:
    """Write `model` and `tokenizer` as a CTranslate2 model directory `out`.

    Args:
        quantization: weight type stored on disk ('' = float32).
        force: replace an existing `out`.
    """
    out = Path(out)
    if out.exists() and not force:
        raise UserError(f"{out} exists; pass --force to replace it")
    # Written beside, then moved: a failed export never leaves a half-written model at `out`.
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        write_ctranslate2(model, tokenizer, Path(tmp), quantization=quantization)
        if out.exists():
            shutil.rmtree(out)
        Path(tmp).rename(out)
    return out


@main_guard
def main(argv: list[str] | None = None) -> Path:
    options = parse_cli(
        ExportOptions, argv, default_config=None, description=__doc__, positional=("run", "out")
    )
    if options.format not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, not {options.format!r}")
    if options.quantization not in QUANTIZATIONS:
        choices = ", ".join(q or "''" for q in QUANTIZATIONS)
        raise UserError(f"--quantization must be one of {choices}, not {options.quantization!r}")
    if not options.out:
        raise UserError(
            "name the output directory: python -m tasks.translation.export RUN --format ctranslate2 OUT"
        )
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        raise UserError(
            "--format ctranslate2 needs the ctranslate2 package: pip install ctranslate2"
        ) from None
    translator = load_translator(TrainedModelOptions(run=options.run, checkpoint=options.checkpoint))
    with torch.no_grad():
        out = export_ctranslate2(
            translator.model,
            translator.tokenizer,
            options.out,
            quantization=options.quantization,
            force=options.force,
        )
    print(f"{translator.trained.path} -> {out} (CTranslate2, {options.quantization or 'float32'})")
    return out


if __name__ == "__main__":
    main()
