"""What a task declares so that the shared verbs serve it: one `TaskSpec` subclass per task.

The verbs (zoo.verbs.cli) are written once; a task fills this spec and registers it by name
(the `zoo.tasks` entry-point group in pyproject.toml). What each verb asks of the spec:

    train      config, default_recipe, runner_task(cfg), after_training(...)
    evaluate   load(...), evaluate(loaded, options) -> Evaluation
    predict    load(...), predict(loaded, lines, options) -> output lines; for one input to the
               terminal, stream(loaded, line, options, write) when the task streams (a language model)
    attention  load(...), attention(loaded, lines, output, options) -> what was drawn
    export     load(...), export_formats, export(loaded, format, output, options)
    average    nothing: checkpoints are averaged the same way for every task

A method a task cannot answer raises `Unsupported`; the verb turns it into one line and exit 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from zoo.config import UserError
from zoo.train import FitResult, Task, Trained
from zoo.verbs.options import VerbOptions


class Unsupported(UserError):
    """A verb or option this task has no meaning for."""


@dataclass
class Loaded:
    """A trained model ready for the verbs: on its device, in eval mode, with the precision it
    runs at. Tasks subclass it to carry what the model needs beside it (a tokenizer, a label
    set), all read from the checkpoint so a run directory is self-contained."""

    model: nn.Module
    trained: Trained
    precision: str


@dataclass
class Evaluation:
    """What `evaluate` found: the metrics (printed with --json, saved beside the run), one
    human-readable line, and the split's outputs one per line (written with --output)."""

    metrics: dict[str, Any]
    summary: str
    outputs: list[str] = field(default_factory=list)


class TaskSpec:
    """One task, as the shared verbs see it. Subclass and fill what the task can do."""

    name: ClassVar[str]
    description: ClassVar[str]  # one line, for `python -m zoo` and --help
    config: ClassVar[type]  # the recipe dataclass (a zoo.train.RunConfig)
    default_recipe: ClassVar[str | None] = None  # the embedded default: a path under configs/
    options: ClassVar[type[VerbOptions]] = VerbOptions  # the task's own knobs added to the shared set
    predict_alias: ClassVar[str] = ""  # the task's own name for predict: translate, parse, ...
    export_formats: ClassVar[tuple[str, ...]] = ()
    ensemble: ClassVar[bool] = False  # whether --ensemble means something here
    int8: ClassVar[bool] = False  # whether --precision int8 does (its models run under zoo.quantize)

    # train
    def runner_task(self, cfg: Any) -> Task:
        """The object zoo.train.fit trains (the runner's protocol)."""
        raise NotImplementedError

    def after_training(self, cfg: Any, task: Task, result: FitResult) -> None:
        """What the train verb does after fit on the main process: a test score, next steps."""

    # every verb that runs a trained model
    def recipe_overrides(self, options: VerbOptions) -> list[str]:
        """Dotted overrides of the saved recipe that the options ask for (where data is read)."""
        return [f"data.data_dir={options.data_dir}"] if options.data_dir else []

    def load(self, trained: list[Trained], options: VerbOptions) -> Loaded:
        """The model (an ensemble when several runs are given) on `options.device`."""
        raise NotImplementedError

    def load_foreign(self, options: VerbOptions) -> Loaded | None:
        """RUN as a model of another library (a Hugging Face directory, say), asked before the
        zoo's own loader; None when RUN is not one. A foreign model has no run directory."""
        return None

    def calibration_examples(self, loaded: Loaded, options: VerbOptions) -> Iterable[Any]:
        """The run's training examples, streamed, for --int8_calibration to sample from."""
        raise Unsupported(f"{self.name}: --int8_calibration is not available for this task")

    def calibrate(self, loaded: Loaded, examples: list[Any], options: VerbOptions) -> None:
        """Run the float model on `examples` (a sample of calibration_examples)."""
        raise NotImplementedError

    def evaluate(self, loaded: Loaded, options: VerbOptions) -> Evaluation:
        raise Unsupported(f"{self.name}: evaluate is not available")

    def predict(self, loaded: Loaded, lines: list[str], options: VerbOptions) -> list[str | list]:
        """One output a line: a text (it may hold several lines, as several outputs for one input
        do), or under --json a list (of texts, or of records)."""
        raise Unsupported(f"{self.name}: predict is not available")

    def stream(
        self, loaded: Loaded, line: str, options: VerbOptions, write: Callable[[str], None]
    ) -> str | None:
        """One input's output written piece by piece with `write` as it is made; returns the whole
        output. None: this task does not stream (predict's output is written when complete)."""
        return None

    def attention(self, loaded: Loaded, lines: list[str], output: Path, options: VerbOptions) -> str:
        raise Unsupported(f"{self.name}: attention pictures are not available")

    def export(self, loaded: Loaded, fmt: str, output: Path, options: VerbOptions) -> None:
        raise Unsupported(f"{self.name}: no export format")

    def default_input(self, loaded: Loaded) -> list[str]:
        """What attention draws on `loaded` when given no input and stdin is a terminal: a
        held-out example (of the run's kind, where a task's runs differ in what they read)."""
        raise Unsupported(f"{self.name}: give the input with --input FILE or on stdin")
