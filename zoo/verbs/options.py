"""The one option set of the shared verbs (evaluate, predict, export, attention, average).

Every task answers the same names for the same thing; a task adds its own knobs (a beam width,
a number of images) by subclassing `VerbOptions` in its spec. Names are written with underscores,
as the recipe keys they sit beside (`--train.max_steps`) and Hugging Face's example scripts
spell them; dashes are accepted too (`--batch-size`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from zoo.config import Invalid
from zoo.verbs.io import input_lines

# One name for the validation split in every task; the names other codebases use are accepted.
SPLITS = ("train", "valid", "test")
SPLIT_ALIASES = {"dev": "valid", "validation": "valid", "val": "valid"}


@dataclass
class VerbOptions:
    """What every verb that runs a trained model may be asked. A verb ignores none silently:
    one that an option means nothing to (say `--split` for predict) is simply not reading it."""

    run: str = field(default="", metadata={"help": "a run directory, or a checkpoint file (required)"})
    checkpoint: str = field(
        default="best",
        metadata={"help": "best | last | averaged (written by the average verb) | a checkpoint file"},
    )
    device: str = field(default="cpu", metadata={"help": "cpu | cuda | cuda:N"})
    precision: str = field(
        default="",
        metadata={
            "help": "fp32 | bf16 | int8 ('' = as the run trained); int8: linear layers with int8 weights, "
            "CPU only, where the task offers it (zoo.quantize)"
        },
    )
    int8_calibration: int = field(
        default=0,
        metadata={
            "help": "int8: first smooth the linear layers' inputs (SmoothQuant, zoo.quantize) on this many "
            "training examples (0 = no smoothing; where the task offers it)"
        },
    )
    threads: int = field(default=0, metadata={"help": "CPU threads for torch (0 = torch's default)"})
    batch_size: int = field(default=0, metadata={"help": "items per batch (0 = the task's default batching)"})
    data_dir: str = field(
        default="", metadata={"help": "data directory ('' = the recipe's, else $ZOO_DATA_DIR)"}
    )
    split: str = field(default="test", metadata={"help": "evaluate: train | valid | test (dev = valid)"})
    input: str = field(
        default="", metadata={"help": "predict, attention: a file of inputs, one per line ('' = stdin)"}
    )
    text: str | None = field(
        default=None,
        metadata={
            "help": "predict, attention: one input given here, instead of --input or stdin "
            "(None = not given; an empty one is refused)",
            "verbatim": True,  # free text: parse_cli takes it as typed
        },
    )
    output: str = field(
        default="",
        metadata={
            "help": "evaluate: a file for the split's outputs; predict: a file ('' = stdout); "
            "attention: the PNG; export: the directory; average: the file ('' = RUN/averaged.pt)"
        },
    )
    limit: int = field(default=0, metadata={"help": "only the first N items (0 = all)"})
    json: bool = field(
        default=False, metadata={"help": "print machine-readable results on stdout (prose goes to stderr)"}
    )
    ensemble: str = field(
        default="", metadata={"help": "more runs to combine with RUN, separated by ':' (where the task can)"}
    )
    format: str = field(default="", metadata={"help": "export: the format ('' = the task's first)"})
    force: bool = field(
        default=False,
        metadata={
            "help": "export: replace an existing output directory (never the run read); average: "
            "checkpoints far apart too, and replace a file at --output that is not an earlier average"
        },
    )
    last: int = field(default=5, metadata={"help": "average: how many of the newest step checkpoints"})

    def check(self) -> None:
        self.split = SPLIT_ALIASES.get(self.split, self.split)
        if self.split not in SPLITS:
            raise Invalid("split", f"must be one of {', '.join(SPLITS)}, not {self.split!r}")
        if self.precision not in ("", "fp32", "bf16", "int8"):
            raise Invalid("precision", f"must be fp32, bf16 or int8, not {self.precision!r}")
        kind, _, index = self.device.partition(":")
        if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
            raise Invalid("device", f"must be cpu, cuda or cuda:N, not {self.device!r}")
        if self.precision == "int8" and kind != "cpu":
            raise Invalid("precision", "int8 runs on the CPU only: use --device cpu (or bf16 on a GPU)")
        if kind == "cuda" and not torch.cuda.is_available():
            raise Invalid("device", "cuda was asked for but no CUDA device is visible")
        if self.int8_calibration and self.precision != "int8":
            raise Invalid("int8_calibration", "calibrates int8 smoothing: it needs --precision int8")
        for key in ("threads", "batch_size", "limit", "int8_calibration"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0, not {getattr(self, key)}")
        if self.last < 1:
            raise Invalid("last", f"must be at least 1, not {self.last}")
        if self.text is not None:  # None: not given (an empty --text= is given, and refused)
            if not self.text:
                raise Invalid("text", "is empty: give the input after --text=, or leave out --text (stdin)")
            if self.input:
                raise Invalid("text", "is the input itself: give --text or --input, not both")
            if "\n" in self.text:
                raise Invalid("text", "is one input, one line: put several in a file (--input) or on stdin")

    def inputs(self) -> list[str]:
        """The inputs, one a line: --text, else the lines of --input or stdin (the first --limit)."""
        return [self.text] if self.text is not None else input_lines(self.input, limit=self.limit)

    @property
    def ensemble_runs(self) -> list[str]:
        return [run for run in self.ensemble.split(":") if run]
