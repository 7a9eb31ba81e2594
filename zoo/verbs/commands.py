"""The verbs themselves, each a function of (spec, argv). They own everything that is the same
for every task: parsing the one option set, loading through `load_trained`, threads, device and
precision, reading inputs, writing outputs, --json."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import torch

from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.sample import reservoir
from zoo.quantize import describe, input_ranges, quantize_int8
from zoo.train import evaluation, fit, load_trained
from zoo.train.average import average_run, check_average_output
from zoo.train.checkpoint import STEP_FILE, schema_name, step_checkpoints
from zoo.verbs.io import (
    check_image_output,
    check_output_directory,
    check_readable,
    check_writable,
    write_directory,
    write_text,
)
from zoo.verbs.options import VerbOptions
from zoo.verbs.spec import Loaded, TaskSpec, Unsupported

# RUN, then (export, average, predict) where the result goes: `export translation RUN OUT`.
POSITIONAL = ("run", "output")
# Options the task CLIs spelled differently before the shared verbs: still read, with a note.
RENAMED = {"out": "output", "eval_limit": "limit", "eval_batch_size": "batch_size"}


def renamed(argv: list[str], names: dict[str, str] = RENAMED) -> list[str]:
    """`argv` with the old option `names` spelled as the new ones, each with a note on stderr."""
    out = []
    for arg in argv:
        key, sep, value = arg[2:].partition("=")
        key = key.replace("-", "_")
        if arg.startswith("--") and key in names:
            print(f"note: --{key} is now --{names[key]}", file=sys.stderr)
            arg = f"--{names[key]}{sep}{value}"
        out.append(arg)
    return out


def train(spec: TaskSpec, argv: list[str]) -> Any:
    """Train `spec`'s model with the runner from a recipe and dotted overrides."""
    # Progress goes to stdout beside the runner's; stderr is kept for the one line of an error.
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    doc = f"python -m zoo train {spec.name} [--config FILE] [--key.sub=value ...]: {spec.description}"
    cfg = parse_cli(spec.config, argv, default_config=spec.default_recipe, description=doc)
    task = spec.runner_task(cfg)
    result = fit(cfg, task)
    if result.run.is_main:
        spec.after_training(cfg, task, result)
    return result


def _options(spec: TaskSpec, verb: str, argv: list[str]) -> VerbOptions:
    doc = f"python -m zoo {verb} {spec.name} RUN [--option=value ...]: {VERB_HELP[verb]}"
    options = parse_cli(spec.options, renamed(argv), default_config=None, description=doc,
                        positional=POSITIONAL, recipe=False)  # fmt: skip
    if not options.run:
        raise UserError(f"name a run directory or checkpoint file: python -m zoo {verb} {spec.name} RUN")
    if options.ensemble and not spec.ensemble:
        raise Unsupported(f"{spec.name}: --ensemble is not available for this task")
    if options.precision == "int8" and not spec.int8:
        raise Unsupported(f"{spec.name}: --precision int8 is not available for this task")
    if options.threads:
        torch.set_num_threads(options.threads)
    return options


def _load(spec: TaskSpec, options: VerbOptions) -> tuple[Loaded, bool]:
    """Every run named (RUN, then the --ensemble ones) through the one loader, unless the task
    reads RUN as a foreign model; with --precision int8, its linear layers made int8. Also says
    whether it was foreign: such a model has no run directory, whatever its `run_dir` holds."""
    loaded = spec.load_foreign(options)
    foreign = loaded is not None
    if loaded is None:
        overrides = spec.recipe_overrides(options)
        runs = [options.run, *options.ensemble_runs]
        which = options.checkpoint
        loaded = spec.load(
            [load_trained(run, spec.config, which=which, overrides=overrides) for run in runs], options
        )
    if options.precision == "int8":
        ranges = _int8_ranges(spec, loaded, options)
        print(f"note: --precision int8: {describe(quantize_int8(loaded.model, ranges))}", file=sys.stderr)
    return loaded, foreign


CALIBRATION_SEED = 0  # which training examples --int8_calibration reads: the same every time


def _int8_ranges(spec: TaskSpec, loaded: Loaded, options: VerbOptions) -> dict | None:
    """The float model's input ranges on --int8_calibration training examples (None: none asked)."""
    if not options.int8_calibration:
        return None
    examples = reservoir(
        spec.calibration_examples(loaded, options), options.int8_calibration, CALIBRATION_SEED
    )
    with evaluation(loaded.model, "fp32"):
        return input_ranges(loaded.model, lambda: spec.calibrate(loaded, examples, options))


def _report(options: VerbOptions, record: dict, summary: str) -> None:
    """The human line on stdout, or with --json the record on stdout and the line on stderr."""
    if options.json:
        print(summary, file=sys.stderr)
        print(json.dumps(record))
    else:
        print(summary)


def _precision_suffix(options: VerbOptions) -> str:
    """What keeps an int8 score beside the float one: `_int8`, `_int8_smoothed512` (calibrated)."""
    if options.precision != "int8":
        return ""
    return "_int8" + (f"_smoothed{options.int8_calibration}" if options.int8_calibration else "")


def evaluate(spec: TaskSpec, argv: list[str]) -> dict:
    """Score a split of the run's data; the record also lands in RUN/eval_<split>.json."""
    options = _options(spec, "evaluate", argv)
    check_writable(options.output, "output")
    loaded, foreign = _load(spec, options)
    with evaluation(loaded.model, loaded.precision):
        result = spec.evaluate(loaded, options)
    if options.output:
        write_text(options.output, "\n".join(result.outputs) + ("\n" if result.outputs else ""))
    trained = loaded.trained
    record = {
        "task": spec.name,
        "checkpoint": str(trained.path),
        "step": trained.step,
        "ema": trained.ema,
        "split": options.split,
        **result.metrics,
    }
    if options.ensemble:
        record["ensemble"] = [options.run, *options.ensemble_runs]
    if options.int8_calibration:
        record["int8_calibration"] = options.int8_calibration
    # Kept beside a zoo run (not a lone file's folder, not a foreign model, whose run_dir is a stand-in
    # such as the current directory) when it scored all of it; an int8 score beside the float one.
    zoo_run = not foreign and (trained.run_dir / "config.yaml").is_file()
    if zoo_run and not options.limit and not options.ensemble:
        name = f"eval_{options.split}{_precision_suffix(options)}.json"
        (trained.run_dir / name).write_text(json.dumps(record, indent=2) + "\n")
    _report(options, record, result.summary)
    return record


def predict(spec: TaskSpec, argv: list[str]) -> list[str]:
    """One output line per input line (a file or stdin) to a file or stdout."""
    options = _options(spec, "predict", argv)
    check_writable(options.output, "output")
    check_readable(options.input, "input")
    loaded, _ = _load(spec, options)  # before stdin: a wrong RUN is told at once, not after the input
    lines = options.inputs()
    if len(lines) == 1 and not options.output and not options.json:
        streamed = _stream(spec, loaded, lines[0], options)
        if streamed is not None:
            return [streamed]
    with evaluation(loaded.model, loaded.precision):
        outputs = spec.predict(loaded, lines, options) if lines else []
    if options.json:
        text = "".join(json.dumps({"input": i, "output": o}) + "\n" for i, o in zip(lines, outputs))
    else:
        text = "".join(line + "\n" for line in outputs)
    write_text(options.output, text)
    return outputs


def _stream(spec: TaskSpec, loaded: Loaded, line: str, options: VerbOptions) -> str | None:
    """One input to stdout as the task makes it (None: the task does not stream)."""

    def write(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    with evaluation(loaded.model, loaded.precision):
        output = spec.stream(loaded, line, options, write)
    if output is not None:
        write("\n")
    return output


def attention(spec: TaskSpec, argv: list[str]) -> Path:
    """Draw the model's attention for the first input (a held-out example without one)."""
    options = _options(spec, "attention", argv)
    check_writable(options.output, "output")
    check_image_output(options.output, "output")
    check_readable(options.input, "input")
    loaded, _ = _load(spec, options)
    use_default = options.text is None and not options.input and sys.stdin.isatty()
    lines = spec.default_input(loaded) if use_default else options.inputs()
    if not lines:
        raise UserError("attention: no input (give --input FILE or lines on stdin)")
    output = Path(options.output) if options.output else loaded.trained.run_dir / "attention.png"
    with evaluation(loaded.model, loaded.precision):
        what = spec.attention(loaded, lines, output, options)
    print(f"{what} drawn in {output}", file=sys.stderr)
    return output


def export(spec: TaskSpec, argv: list[str]) -> Path:
    """Write the trained model in a foreign format (the task's `export_formats`)."""
    options = _options(spec, "export", argv)
    if not spec.export_formats:
        raise Unsupported(f"{spec.name}: no export format")
    fmt = options.format or spec.export_formats[0]
    if fmt not in spec.export_formats:
        raise UserError(f"--format {fmt!r}: {spec.name} exports to {', '.join(spec.export_formats)}")
    if not options.output:
        raise UserError(f"name the output directory: python -m zoo export {spec.name} RUN --output DIR")
    if options.precision == "int8":
        raise UserError("export writes the float weights: leave out --precision int8")
    output = Path(options.output)
    # Before loading, where the check costs nothing; then again with the files the loader read.
    check_output_directory(output, force=options.force, keep=_named_inputs(options))
    loaded, _ = _load(spec, options)
    trained = loaded.trained
    read = [trained.path]
    if (trained.run_dir / "config.yaml").is_file():  # a zoo run (not a lone file's folder, not foreign)
        read += [trained.run_dir, trained.run_dir / "checkpoints"]
    write_directory(
        output,
        lambda staging: spec.export(loaded, fmt, staging, options),
        force=options.force,
        keep=[*_named_inputs(options), *read],
    )
    print(f"exported {loaded.trained.path} as {fmt} to {output}", file=sys.stderr)
    return output


def _named_inputs(options: VerbOptions) -> list[Path]:
    """What the options name to read: the runs and their checkpoints (a --checkpoint FILE is
    known once loaded: `export` checks the file it read)."""
    runs = [Path(run) for run in (options.run, *options.ensemble_runs)]
    return [*runs, *(run / "checkpoints" for run in runs)]


def average(spec: TaskSpec, argv: list[str]) -> Path:
    """Average the newest --last step checkpoints of a run (the paper: 5 for base, 20 for big)."""
    return _average(_options(spec, "average", argv), spec)


@main_guard
def average_any_task(argv: list[str] | None = None) -> Path:
    """`python -m zoo.train.average RUN`: the same, for a run of any task."""
    doc = "python -m zoo.train.average RUN [--last N] [--output FILE]: " + VERB_HELP["average"]
    options = parse_cli(VerbOptions, argv, default_config=None, description=doc, positional=POSITIONAL,
                        recipe=False)  # fmt: skip
    return _average(options, None)


def _average(options: VerbOptions, spec: TaskSpec | None) -> Path:
    run = Path(options.run)
    if not run.is_dir():
        raise UserError(f"average needs a run directory, not {run}")
    output = Path(options.output) if options.output else run / "averaged.pt"
    check_average_output(output, force=options.force)
    check_writable(str(output), "output")
    found = step_checkpoints(run / "checkpoints")
    if len(found) >= options.last:  # too few is average_run's one-line refusal
        check_close(found[-options.last :], force=options.force)
    paths = average_run(run, options.last, output, schema=schema_name(spec.config) if spec else "")
    print(f"averaged {len(paths)} checkpoints ({paths[0].name} .. {paths[-1].name}) -> {output}")
    print(f"evaluate it: python -m zoo evaluate {spec.name if spec else 'TASK'} {run} --checkpoint averaged")
    return output


# Averaging helps over the last stretch of training (the paper: the last 5 or 20 checkpoints,
# written 10 minutes apart, of a 12-hour run); a span reaching back to early weights averages a
# worse model in (the demo's steps 200-600: 53.43 BLEU against 90.92 for best.pt).
CLOSE_ENOUGH = 0.8  # the first averaged step at least this fraction of the last


def check_close(paths: list[Path], *, force: bool) -> None:
    steps = [int(STEP_FILE.match(path.name).group(1)) for path in paths]
    if len(steps) > 1 and steps[0] < CLOSE_ENOUGH * steps[-1] and not force:
        raise UserError(
            f"--last {len(steps)} spans steps {steps[0]}-{steps[-1]}: averaging helps over the last "
            f"stretch of training (the first step at least {CLOSE_ENOUGH:.0%} of the last); save more "
            "often (train.save_every, train.keep_last), average fewer (--last), or pass --force"
        )


VERB_HELP = {
    "evaluate": "score a split of the run's data",
    "predict": "run the model on inputs, one per line, from --input or stdin",
    "attention": "draw the model's attention for the first input",
    "export": "write the trained model in a foreign format",
    "average": "average the newest step checkpoints into RUN/averaged.pt",
}
