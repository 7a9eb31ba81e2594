"""The recurrent baseline against the Transformer on Multi30k En->De: the paper's Table 2 claim
(better quality for a fraction of the training cost) in miniature.

    python -m bench.studies.recurrent [--data_dir DIR] [--threads 2] [--out_root runs/studies]
        [--out bench/results] [--dry_run]

Two runs, each trained by the translation task's own command unless finished (a stopped run
resumes where it stopped when the study is run again):

- rnn: the `multi30k_rnn` recipe (a bidirectional GRU encoder, a GRU decoder with additive
  attention; zoo.models.recurrent_seq2seq) in OUT_ROOT/recurrent/rnn;
- transformer: the base row of bench.studies.variations (the `multi30k` recipe at the study
  budget, 800 steps) in OUT_ROOT/variations/base, that study's very run.

Both are measured the same way, with their final weights: sacreBLEU greedy and beam 4 on
Multi30k val and test_2016_flickr (greedy val from the runner's last validation, beam-4 test from
the test.json the train command writes, the others from the evaluate command); the minutes spent
in training steps (bench.studies.multi30k.training_seconds); training FLOPs, the target tokens
the runner logged times the analytic FLOPs per target token over the training split's lengths
(bench.studies.flops); and decoding speed, sentences per second of greedy and beam-4 search over
the first --speed_sentences test sentences on one thread, the four searches timed in turns
(medians of --repeats rounds). From the validation records of each run (greedy BLEU against
training minutes and FLOPs, from 0 at step 0, linear in between): each model's BLEU at the
budget of the cheaper run (equal wall time, equal FLOPs), and the cost each needed to reach the
lower of the two final BLEUs.

Writes studies_recurrent.{json,md,png} into --out (runs/bench unless told; bench/results to
record them). Measurements are cached in OUT_ROOT/recurrent/ (one file per model, one for the
speeds): a study run again measures only what is missing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from bench.output import add_out_option
from bench.studies.flops import training_flops_per_target_token
from bench.studies.multi30k import (
    EVALUATE,
    OUT_ROOT,
    STUDY_STEPS,
    TRAIN,
    Budget,
    call,
    default_data_dir,
    eval_every,
    finished,
    logged_results,
    measure,
    shown,
    training_seconds,
)
from bench.studies.recurrent_report import write_report
from bench.studies.variations import BASE, commit, machine
from bench.studies.variations_report import described
from bench.timing import interleaved_medians
from tasks.translation.config import TranslationConfig
from tasks.translation.data import load_pairs
from tasks.translation.spec import TranslationOptions, TranslationSpec
from tasks.translation.task import translate_ids
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.train import load_trained
from zoo.train.metrics_log import read_metrics

NAME = "studies_recurrent"
RNN_RECIPE = "configs/translation/multi30k_rnn.yaml"
BEAMS = {"greedy": 1, "beam4": 4}


@dataclass(frozen=True)
class Contender:
    """One model of the comparison: its run directory and the arguments of its training command."""

    name: str
    run_dir: Path
    train_args: list[str]

    def config(self) -> TranslationConfig:
        return parse_cli(TranslationConfig, self.train_args, default_config=None, description="")

    def evaluate_args(self, split: str, beam: int, budget: Budget) -> list[str]:
        """The evaluate command's arguments: `beam` on `split`, the final weights, --json."""
        return [
            str(self.run_dir), "--checkpoint=last", f"--split={split}", f"--beam_size={beam}", "--json",
            f"--threads={budget.threads}", f"--device={budget.device}", f"--data_dir={budget.data_dir}",
        ]  # fmt: skip


def contenders(budget: Budget, out_root: Path, rnn_steps: int) -> tuple[Contender, Contender]:
    """The Transformer base row (on `budget`) and the rnn recipe (`rnn_steps` > 0: that many
    steps, validating budget.evals times; 0: the recipe's)."""
    transformer = Contender("transformer", budget.run_dir(BASE), budget.train_args(BASE))
    steps = [f"--train.max_steps={rnn_steps}", f"--train.eval_every={eval_every(rnn_steps, budget.evals)}"]
    run_dir = out_root / "recurrent" / "rnn"
    rnn_args = ["--config", RNN_RECIPE, f"--data.data_dir={budget.data_dir}", f"--train.out_dir={run_dir}",
                f"--train.threads={budget.threads}", *(steps if rnn_steps else [])]  # fmt: skip
    return transformer, Contender("rnn", run_dir, rnn_args)


def evaluated(module_args: list[str]) -> dict[str, Any]:
    """The evaluate command's --json record (the last line it prints on stdout)."""
    return json.loads(call(EVALUATE, module_args, capture=True).strip().splitlines()[-1])


def corpus_lengths(cfg: TranslationConfig, run_dir: Path) -> tuple[list[tuple[int, int]], int]:
    """(S, T) of every training pair under the run's own tokenizer, EOS included, and the size
    of its vocabulary."""
    tokenizer = SentencePieceTokenizer.load(run_dir / "spm.model")
    pairs = list(load_pairs(cfg.data, "train"))
    sources = tokenizer.encode_batch([src for src, _ in pairs])
    targets = tokenizer.encode_batch([tgt for _, tgt in pairs])
    return [(len(s) + 1, len(t) + 1) for s, t in zip(sources, targets)], tokenizer.vocab_size


def curve(run_dir: Path, flops_per_token: float) -> list[dict[str, float]]:
    """Each validation record as (step, minutes in training steps, training FLOPs, greedy BLEU);
    only those at the step of a train record (train.eval_every a multiple of train.log_every,
    as in the recipes), whose tokens so far are then known."""
    records = read_metrics(run_dir)
    train = {r["step"]: r for r in records if r["split"] == "train"}
    points = []
    for valid in {r["step"]: r for r in records if r["split"] == "valid" and r["step"] in train}.values():
        step = valid["step"]
        tokens = sum(r["tokens"] for s, r in train.items() if s <= step)
        points.append(
            {
                "step": step,
                "minutes": training_seconds([r for r in records if r["step"] <= step]) / 60,
                "flops": tokens * flops_per_token,
                "bleu": valid["bleu"],
            }
        )
    return points


def bleu_scores(model: Contender, budget: Budget, logged: dict[str, Any], valid_beam4: float | None) -> dict:
    """sacreBLEU of the final weights, {split: {greedy, beam4}}: what the runner already scored
    (the last validation, greedy; test.json, the recipe's beam 4), the rest decoded now."""
    test_file = model.run_dir / "test.json"
    test_beam4 = json.loads(test_file.read_text())["bleu"] if test_file.is_file() else None
    scores = {"valid": {"greedy": logged["bleu_greedy"], "beam4": valid_beam4},
              "test": {"greedy": None, "beam4": test_beam4}}  # fmt: skip
    for split, by_search in scores.items():
        for search, value in by_search.items():
            if value is None:
                by_search[search] = evaluated(model.evaluate_args(split, BEAMS[search], budget))["bleu"]
    return scores


def measured(model: Contender, budget: Budget, hardware: str, cache: Path) -> dict[str, Any]:
    """Train `model` unless finished, then everything but decoding speed (cached in `cache`)."""
    if cache.is_file():
        return json.loads(cache.read_text())
    cfg = model.config()
    if model.name == "transformer":  # bench.studies.variations' own row: trained and cached there
        valid_beam4 = measure(BASE, budget, hardware)["bleu_beam4"]
    else:
        if not finished(model.run_dir, cfg.train.max_steps):
            call(TRAIN, model.train_args)
        valid_beam4 = None
    logged = logged_results(model.run_dir, cfg.train.max_steps)
    lengths, vocab_size = corpus_lengths(cfg, model.run_dir)
    per_token = training_flops_per_target_token(cfg.model, vocab_size, lengths)
    points = curve(model.run_dir, per_token)
    results = {
        "command": shown(TRAIN, model.train_args),
        "run_dir": str(model.run_dir),
        "steps": cfg.train.max_steps,
        "hardware": hardware,
        **logged,
        "flops_per_target_token": per_token,
        "train_flops": sum(r["tokens"] for r in read_metrics(model.run_dir, "train")) * per_token,
        "bleu": bleu_scores(model, budget, logged, valid_beam4),
        "curve": points,
    }
    cache.write_text(json.dumps(results, indent=2) + "\n")
    return results


def decoding_speed(models: tuple[Contender, ...], budget: Budget, sentences: int, repeats: int) -> dict:
    """{model: {greedy, beam4: sentences per second}} on one thread over the first `sentences`
    test sentences, the searches of both models timed in turns."""
    torch.set_num_threads(1)
    searches = {}
    for model in models:
        trained = load_trained(model.run_dir, TranslationConfig, which="last",
                               overrides=[f"data.data_dir={budget.data_dir}"])  # fmt: skip
        translator = TranslationSpec().load([trained], TranslationOptions(run=str(model.run_dir)))
        pairs = list(load_pairs(trained.cfg.data, "test"))[:sentences]
        sources = translator.tokenizer.encode_batch([src for src, _ in pairs])
        for search, beam in BEAMS.items():
            decode = replace(trained.cfg.decode, beam_size=beam)
            run = partial(translate_ids, translator.model, sources, decode, beam_size=beam,
                          max_tokens=translator.max_tokens)  # fmt: skip
            searches[f"{model.name} {search}"] = run
        translator.model.eval()
    with torch.inference_mode():
        seconds = interleaved_medians(searches, repeats=repeats)
    return {
        "sentences": sentences,
        "threads": 1,
        "repeats": repeats,
        **{m.name: {s: sentences / seconds[f"{m.name} {s}"] for s in BEAMS} for m in models},
    }


def interpolated(points: list[tuple[float, float]], x: float) -> float | None:
    """y at x along `points` (x increasing), linear in between; None past the last point."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def first_reaching(points: list[tuple[float, float]], y: float) -> float | None:
    """The smallest x where the piecewise-linear `points` reach y; None if they never do."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y1 >= y:
            return x0 if y0 >= y else x0 + (x1 - x0) * (y - y0) / (y1 - y0)
    return None


def comparisons(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Validation BLEU at equal training minutes and FLOPs (the cheaper run's total), and the
    minutes and FLOPs each model needed to reach the lower final BLEU."""
    out: dict[str, Any] = {}
    target = min(r["curve"][-1]["bleu"] for r in results.values())
    for cost in ("flops", "minutes"):
        paths = {n: [(0.0, 0.0)] + [(p[cost], p["bleu"]) for p in r["curve"]] for n, r in results.items()}
        budget = min(path[-1][0] for path in paths.values())
        out[f"equal_{cost}"] = {"budget": budget, **{n: interpolated(p, budget) for n, p in paths.items()}}
        out[f"{cost}_to_reach"] = {"bleu": target, **{n: first_reaching(p, target) for n, p in paths.items()}}
    return out


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data_dir", default=default_data_dir(), help="folder holding multi30k/")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for training and evaluation")
    parser.add_argument("--out_root", type=Path, default=OUT_ROOT, help="where the studies' runs live")
    parser.add_argument("--max_steps", type=int, default=STUDY_STEPS, help="the Transformer row's steps")
    parser.add_argument("--rnn_steps", type=int, default=0, help="the rnn run's steps (0 = the recipe's)")
    parser.add_argument(
        "--evals",
        type=int,
        default=2,
        help="validations per run (the equal-cost readings interpolate between them)",
    )
    parser.add_argument("--speed_sentences", type=int, default=200, help="test sentences per timed search")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds of the four searches")
    parser.add_argument("--dry_run", action="store_true", help="print the commands; run nothing")
    add_out_option(parser)
    args = parser.parse_args(argv)
    if (
        args.max_steps < 2
        or args.rnn_steps < 0
        or min(args.threads, args.speed_sentences, args.repeats, args.evals) < 1
    ):
        raise UserError("--max_steps must be at least 2, --rnn_steps at least 0, and --threads, "
                        "--speed_sentences, --repeats and --evals at least 1")  # fmt: skip
    return args


@main_guard
def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arguments(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    budget = Budget(
        args.out_root / "variations", args.data_dir, args.max_steps, args.threads, device, evals=args.evals
    )
    models = contenders(budget, args.out_root, args.rnn_steps)
    for model in models:
        model.config()  # a bad key or value stops the study here, before any training
    if args.dry_run:
        print("\n".join(shown(TRAIN, model.train_args) for model in models))
        return None
    folder = args.out_root / "recurrent"
    folder.mkdir(parents=True, exist_ok=True)
    hardware = described(machine())
    results = {}
    for model in models:
        print(f"== {model.name}: {shown(TRAIN, model.train_args)}", flush=True)
        results[model.name] = measured(model, budget, hardware, folder / f"{model.name}.json")
    speed_file = folder / "speed.json"
    if not speed_file.is_file():
        speed = decoding_speed(models, budget, args.speed_sentences, args.repeats)
        speed_file.write_text(json.dumps(speed, indent=2) + "\n")
    record = {
        "study": "the recurrent baseline (bench.studies.recurrent)",
        "command": shlex.join(["python", "-m", "bench.studies.recurrent", *argv]),
        "hardware": machine(),
        "commit": commit(),
        "models": results,
        "speed": json.loads(speed_file.read_text()),
        **comparisons(results),
    }
    write_report(record, args.out, NAME)
    return record


if __name__ == "__main__":
    main()
