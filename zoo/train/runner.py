"""The task-agnostic training loop.

It knows the Task protocol (zoo/train/task.py) and nothing of any task. It owns devices,
torchrun/DDP or FSDP2 (zoo/train/fsdp.py), bf16 autocast, gradient accumulation, clipping,
optimizer and schedule, EMA, evaluation, checkpoints with exact resume, the run directory,
signals, metrics and the progress bar.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from zoo.config import ConfigError, UserError, check_values, to_yaml
from zoo.train.checkpoint import (
    CheckpointManager,
    load_checkpoint,
    load_weights,
    resolve_checkpoint,
    schema_name,
)
from zoo.train.config import RunConfig
from zoo.train.distributed import (
    all_gather_objects,
    all_reduce_sum,
    barrier,
    broadcast_object,
    init_distributed,
)
from zoo.train.evaluation import autocast, evaluation
from zoo.train.interrupt import Interrupted, StopRequest
from zoo.train.memory import peak_memory_gib
from zoo.train.metrics_log import MetricsLog, read_metrics
from zoo.train.optim import build_optimizer
from zoo.train.rundir import RunDirectory, may_change_on_resume
from zoo.train.schedules import build_schedule
from zoo.train.state import rng_state, seed_everything, set_rng_state
from zoo.train.task import RunContext, Task, Term, step_accumulation, task_artifacts
from zoo.train.threads import choose_threads

if TYPE_CHECKING:
    from zoo.train.fsdp import ShardedModel

log = logging.getLogger("zoo.train")


class TrainingDiverged(UserError):
    """The loss became NaN or infinite (and the policy says stop, or skipping did not help)."""


@dataclass
class FitResult:
    model: nn.Module  # the evaluated weights (the EMA copy when EMA is on), eval mode
    metrics: dict[str, float]
    run_dir: Path
    step: int
    run: RunContext  # rank, device, precision: run further evaluation as the run did


@dataclass
class DataPosition:
    """Where the next batch comes from: restored on resume so no batch is seen twice."""

    epoch: int = 0
    batch: int = 0


def move_to(obj: Any, device: torch.device) -> Any:
    """Move every tensor inside dicts, lists, tuples and dataclasses to `device`."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, dict):
        return {k: move_to(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_to(v, device) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(
            obj, **{f.name: move_to(getattr(obj, f.name), device) for f in dataclasses.fields(obj) if f.init}
        )
    return obj


class Runner:
    """One training run. Use `fit(cfg, task)`."""

    def __init__(self, cfg: RunConfig, task: Task) -> None:
        self.cfg, self.tc, self.task = cfg, cfg.train, task
        try:  # a config built in code has not been through load_config's checks
            check_values(cfg)
        except ConfigError as err:
            raise UserError(str(err)) from None
        if self.tc.fsdp and self.tc.ema_decay > 0:  # the EMA copy would need sharding and gathering
            raise UserError(
                "keys 'train.fsdp' and 'train.ema_decay': an EMA of sharded weights is not supported "
                "(set train.ema_decay=0 or train.fsdp=false)"
            )
        self.threads, self.threads_why = choose_threads(self.tc.threads)
        torch.set_num_threads(self.threads)
        env = init_distributed(self.tc.device)
        grad_accum = step_accumulation(task, env.world_size, self.tc.grad_accum)
        if grad_accum < 1:
            raise UserError(f"the task derived {grad_accum} micro-batches per step: must be at least 1")
        self.run = RunContext(
            **dataclasses.asdict(env),
            run_dir=Path(self.tc.out_dir),
            seed=self.tc.seed,
            precision=self.tc.precision,
            grad_accum=grad_accum,
        )
        self.run_dir = self.run.run_dir
        self.unit_name = getattr(task, "unit_name", "units")
        self.directory = RunDirectory(self.run_dir)
        outcome: str | UserError = "new"
        if self.run.is_main:
            try:
                outcome = self.directory.prepare(
                    to_yaml(cfg), resume=self.tc.resume, may_change=may_change_on_resume(cfg)
                )
            except UserError as err:
                outcome = err  # every rank stops with it, not only rank 0
        outcome = broadcast_object(outcome, self.run)
        if isinstance(outcome, UserError):
            self.directory.release()
            raise outcome
        try:
            self._build(cfg, task, outcome)
            # The run's files only once the start has passed its checks (the task's set-up and
            # the model build included): a start refused on a bad value leaves nothing behind
            # that would block the corrected command.
            if self.run.is_main:
                self.directory.write_config(to_yaml(cfg))
        except BaseException:
            self.directory.release()  # a failed set-up (bad data, say) leaves the directory free
            raise

    # ----- set-up -------------------------------------------------------------------------
    def _build(self, cfg: RunConfig, task: Task, outcome: str) -> None:
        """The task's data, the model, optimizer, schedule and EMA, resumed when `outcome` says."""
        task.setup(self.run)
        self.artifacts = task_artifacts(task)
        self.checkpoints = CheckpointManager(
            self.run_dir / "checkpoints",
            keep_last=self.tc.keep_last,
            best_metric=self.tc.best_metric,
            best_mode=self.tc.best_mode,
        )
        seed_everything(self.tc.seed)  # same initial weights on every rank
        self.model = task.build_model().to(self.run.device)
        if self.tc.init_from:  # before the EMA copies the weights; a resume overwrites them
            self._init_from(self.tc.init_from)
        found = self._latest_checkpoint() if outcome == "resume" else None
        if found is not None:  # every rank reads the file: the plain weights, before any sharding
            load_weights(self.model, found[1]["model"], found[0])
        self.fsdp = self._shard()  # before the optimizer, which must hold the sharded parameters
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = build_optimizer(self.model, cfg.optim)
        self.scheduler = build_schedule(self.optimizer, cfg.schedule, self.tc.max_steps)
        self.ema = (
            AveragedModel(self.model, multi_avg_fn=get_ema_multi_avg_fn(self.tc.ema_decay), use_buffers=True)
            if self.tc.ema_decay > 0
            else None
        )
        self.step, self.position, self.best = 0, DataPosition(), None
        self.resumed_from: Path | None = None
        self.last_metrics: dict[str, float] = {}
        seed_everything(self.tc.seed + self.run.rank)  # independent dropout per rank
        if found is not None:
            self._resume(*found)
        self.train_model = self._wrap(self.model)
        self.stop = StopRequest()
        self.skipped_in_a_row = 0

    def _shard(self) -> ShardedModel | None:
        """FSDP2 when asked for under torchrun; one process has nothing to shard."""
        if not self.tc.fsdp:
            return None
        if not self.run.enabled:
            self._print("train.fsdp: one process, nothing to shard: training unsharded")
            return None
        # Imported here: torch's FSDP and distributed-checkpoint modules take 0.4 s to import,
        # which every verb that imports the runner would pay.
        from zoo.train.fsdp import ShardedModel

        return ShardedModel(self.model, self.run)

    def _wrap(self, model: nn.Module) -> nn.Module:
        # Under FSDP the whole sharded model is compiled (torchtitan's alternative to per-block
        # compiling): dynamo skips FSDP's hooks and compiles the code between them, each block.
        if self.tc.compile:
            model = torch.compile(model)
        if self.run.enabled and self.fsdp is None:
            ids = [self.run.local_rank] if self.run.device.type == "cuda" else None
            model = DistributedDataParallel(model, device_ids=ids)
        return model

    def _latest_checkpoint(self) -> tuple[Path, dict]:
        found = self.checkpoints.latest_valid()
        if found is None:  # the run directory saw step files at its start: they went since
            raise UserError(f"{self.checkpoints.directory}: the step checkpoints are gone; nothing to resume")
        return found

    def _resume(self, path: Path, state: dict) -> None:
        """All but the model's weights (loaded before sharding) from the checkpoint `state`."""
        self.resumed_from = path
        if self.fsdp is not None:
            self.fsdp.load_optimizer_state(self.optimizer, state["optimizer"], path)
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self._check_optimizer_state(path)
        self.scheduler.load_state_dict(state["scheduler"])
        if self.ema is not None and "ema" in state:
            self.ema.load_state_dict(state["ema"])
        # best.pt may be newer than the step file (evaluation runs after the save).
        self.step, self.best = state["step"], self.checkpoints.best_value()
        self.position = DataPosition(**state["position"])
        # The step file is written before its step's evaluation, so the metrics it holds are
        # those of an earlier evaluation: the metrics of this step are the ones logged after it.
        self.last_metrics = broadcast_object(self._logged_evaluation(self.step), self.run)
        rngs = state["rng"]
        if len(rngs) == self.run.world_size:
            set_rng_state(rngs[self.run.rank])
        else:
            log.warning(
                "checkpoint has RNG states of %d ranks, this run has %d: dropout will "
                "differ from an uninterrupted run",
                len(rngs),
                self.run.world_size,
            )
        self._print(
            f"resumed from {path} at step {self.step} "
            f"(epoch {self.position.epoch}, batch {self.position.batch})"
        )

    def _logged_evaluation(self, step: int) -> dict[str, float]:
        """The metrics logged by the evaluation of `step` (rank 0; {} when there was none)."""
        if not self.run.is_main:
            return {}
        try:
            records = read_metrics(self.run_dir, "valid")
        except (ValueError, KeyError, OSError):  # a damaged log: evaluate again
            return {}
        found = [r for r in records if r.get("step") == step]
        if not found:
            return {}
        return {k: v for k, v in found[-1].items() if k not in ("split", "step", "time")}

    def _init_from(self, source: str) -> None:
        """Weights only, as fairseq's --restore-file with --reset-optimizer: continued
        pretraining or fine-tuning under a new schedule, which exact resume cannot give."""
        path, _ = resolve_checkpoint(source, "last")
        load_weights(self.model, load_checkpoint(path)["model"], path)
        self._print(f"initialised the model from {path}")

    def _check_optimizer_state(self, path: Path) -> None:
        """Optimizer state is stored by parameter position, not name: a model whose parameters
        were reordered would load it silently and fail deep inside the first step."""
        for group in self.optimizer.param_groups:
            for param in group["params"]:
                for key, value in self.optimizer.state.get(param, {}).items():
                    if isinstance(value, torch.Tensor) and value.ndim and value.shape != param.shape:
                        raise UserError(
                            f"{path}: optimizer state '{key}' has shape {tuple(value.shape)} "
                            f"where this model has a parameter of {tuple(param.shape)}: "
                            "the checkpoint comes from a different model definition"
                        )

    def _print(self, text: str) -> None:
        if self.run.is_main:
            tqdm.write(text)

    # ----- data ---------------------------------------------------------------------------
    def _batches(self) -> Iterator[Any]:
        """Yield batches forever, advancing epochs; `self.position` counts what was yielded."""
        while True:
            empty = True
            for batch in self.task.train_batches(self.position.epoch, start=self.position.batch):
                empty = False
                self.position.batch += 1
                yield batch
            if empty and self.position.batch == 0:
                raise UserError(f"the task yielded no training batches for epoch {self.position.epoch}")
            self.position = DataPosition(self.position.epoch + 1, 0)

    # ----- one optimizer step -------------------------------------------------------------
    def _step_units(self, micro: list[Any]) -> tuple[dict[str, float], float]:
        """Each term's units over the step's micro-batches and ranks (one all-reduce), and the
        throughput count."""
        counts = [self.task.units(batch) for batch in micro]
        keys = list(counts[0])
        totals = all_reduce_sum(
            torch.tensor(
                [[c[k] for k in keys] for c in counts], dtype=torch.float64, device=self.run.device
            ).sum(0),
            self.run,
        )
        units = dict(zip(keys, totals.tolist()))
        throughput = units.pop(self.unit_name) if self.unit_name in units else units[keys[0]]
        return units, throughput

    def _train_step(self, batches: Iterator[Any]) -> dict[str, float] | None:
        """Accumulate the run's `grad_accum` micro-batches and step.

        Every term's units are counted before the forward, so each micro-batch's term loss is
        scaled by world_size / (the step's total units of that term) before backward: with DDP
        averaging over ranks, the gradient is exactly that of one batch holding every
        micro-batch of every rank, for every term. Returns None for a skipped step.
        """
        micro = [move_to(next(batches), self.run.device) for _ in range(self.run.grad_accum)]
        units, throughput = self._step_units(micro)
        if not any(units.values()):
            raise UserError(f"step {self.step + 1}: the batches hold no {self.unit_name} to train on")
        scale = {t: self.run.world_size / u if u else 0.0 for t, u in units.items()}
        names: list[str] = []
        sums: torch.Tensor | None = None
        for i, batch in enumerate(micro):
            with self._gradient_sync(i == len(micro) - 1):
                with autocast(self.run.device, self.tc.precision):
                    terms: dict[str, Term] = self.task.train_step(self.train_model, batch)
                objective = sum(term.loss * scale[name] for name, term in terms.items())
                objective.backward()
            names, values = self._flatten(terms)
            sums = values if sums is None else sums + values
        # One all-reduce for every sum and the stop flag: a signal on any rank stops them all.
        flag = torch.tensor(
            [float(self.stop.signum is not None)], dtype=torch.float64, device=self.run.device
        )
        reduced = all_reduce_sum(torch.cat([sums, flag]), self.run).tolist()
        self.stop_everywhere = reduced.pop() > 0
        return self._finish_step(dict(zip(names, reduced)), units, throughput)

    def _gradient_sync(self, last: bool) -> contextlib.AbstractContextManager:
        """Gradients are reduced across ranks on a step's last micro-batch only."""
        if self.fsdp is not None:
            self.fsdp.set_gradient_sync(last)
        elif self.run.enabled and not last:
            return self.train_model.no_sync()
        return contextlib.nullcontext()

    def _flatten(self, terms: dict[str, Term]) -> tuple[list[str], torch.Tensor]:
        """Names "term:metric" and one float64 vector of a micro-batch's sums (one sync)."""
        names, values = [], []
        for name, term in terms.items():
            for metric, value in {"loss": term.loss, **term.metrics}.items():
                names.append(f"{name}:{metric}")
                values.append(torch.as_tensor(value).detach().to(self.run.device, torch.float64))
        return names, torch.stack(values)

    def _finish_step(
        self, sums: dict[str, float], units: dict[str, float], throughput: float
    ) -> dict[str, float] | None:
        """Check the loss, clip, step the optimizer; the step's per-unit means for the log."""
        means: dict[str, float] = {}
        single = len(units) == 1
        for key, value in sums.items():
            term, metric = key.split(":", 1)
            means[metric if single else f"{term}_{metric}"] = value / units[term] if units[term] else 0.0
        loss = sum(means["loss" if single else f"{t}_loss"] for t in units)
        grad_norm = (
            torch.nn.utils.clip_grad_norm_(self.params, self.tc.clip_norm).item()
            if self.tc.clip_norm > 0
            else None
        )
        if not math.isfinite(loss) or (grad_norm is not None and not math.isfinite(grad_norm)):
            self._skip_or_stop(f"loss {loss}, gradient norm {grad_norm}")
            return None
        self.skipped_in_a_row = 0
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        means["loss"] = loss
        means[self.unit_name] = throughput
        if grad_norm is not None:
            means["grad_norm"] = grad_norm
        return means

    def _skip_or_stop(self, what: str) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        step = self.step + 1
        if self.tc.nan_policy == "stop":
            raise TrainingDiverged(
                f"non-finite {what} at step {step} (set train.nan_policy=skip to skip such steps)"
            )
        self.skipped_in_a_row += 1
        if not all(torch.isfinite(p).all() for p in self.params):
            raise TrainingDiverged(
                f"step {step}: the weights themselves are no longer finite; "
                "resume from an earlier checkpoint with a lower learning rate"
            )
        if self.skipped_in_a_row >= self.tc.nan_max_skips:
            raise TrainingDiverged(
                f"{self.skipped_in_a_row} steps in a row had non-finite {what} "
                f"(last at step {step}; train.nan_max_skips={self.tc.nan_max_skips})"
            )
        self._print(f"non-finite {what} at step {step}: step skipped")

    # ----- evaluation and checkpoints -----------------------------------------------------
    def eval_model(self) -> nn.Module:
        """The EMA copy when kept; under FSDP, rank 0's plain copy (current as of the last
        evaluation, which every run's end has) and the sharded model elsewhere."""
        if self.ema is not None:
            return self.ema.module
        if self.fsdp is not None and self.fsdp.plain is not None:
            return self.fsdp.plain
        return self.model

    def evaluate(self) -> dict[str, float]:
        """Task metrics on rank 0 (the others wait and receive them)."""
        if self.fsdp is not None:
            self.fsdp.refresh_plain()  # every rank gathers the weights into rank 0's copy
        metrics: dict[str, float] = {}
        if self.run.is_main:
            model = self.eval_model()
            with evaluation(model, self.tc.precision):
                metrics = {k: float(v) for k, v in self.task.evaluate(model).items()}
        metrics = broadcast_object(metrics, self.run)
        self.last_metrics = metrics
        return metrics

    def _state(self) -> dict:
        """The checkpoint (complete on rank 0). Every rank calls it: its gathers are collective."""
        model, optimizer = self._model_and_optimizer_state()
        state = {
            "model": model,
            "optimizer": optimizer,
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "position": dataclasses.asdict(self.position),
            "rng": all_gather_objects(rng_state(), self.run),
            "best": self.best,
            "metrics": self.last_metrics,
            "config": to_yaml(self.cfg),
            "schema": schema_name(type(self.cfg)),
            "artifacts": self.artifacts,
        }
        if self.ema is not None:
            state["ema"] = self.ema.state_dict()
        return state

    def _model_and_optimizer_state(self) -> tuple[dict, dict]:
        """Under FSDP gathered into full tensors on rank 0 ({} elsewhere), as an unsharded run's."""
        if self.fsdp is not None:
            return self.fsdp.model_state(), self.fsdp.optimizer_state(self.optimizer)
        return self.model.state_dict(), self.optimizer.state_dict()

    def save(self) -> Path:
        state = self._state()  # every rank gathers RNG states
        path = self.checkpoints.directory / f"step_{self.step:08d}.pt"
        if self.run.is_main:
            path = self.checkpoints.save(state, self.step)
        barrier(self.run)
        return path

    def _evaluate_after_save(self, saved: Path) -> dict[str, float]:
        """Evaluate once the step is safe on disk; a failure names the step and the checkpoint."""
        try:
            metrics = self.evaluate()
        except UserError as err:
            raise UserError(
                f"evaluation at step {self.step} failed ({err}); training up to this step is saved in {saved}"
            ) from None
        except Exception as err:
            raise RuntimeError(
                f"evaluation at step {self.step} failed; training up to this step is saved in {saved}"
            ) from err
        self._check_best_metric(metrics, saved)
        if self.checkpoints.is_better(metrics, self.best):
            self.best = float(metrics[self.tc.best_metric])
            state = self._state()  # on every rank: it gathers
            if self.run.is_main:
                self.checkpoints.save_best(state)
        return metrics

    def _check_best_metric(self, metrics: dict[str, float], saved: Path | None) -> None:
        """train.best_metric must name a metric the task reports, known at its first evaluation
        only: the run stops there, its step saved and the evaluation not logged, so the corrected
        command resumes and (at train.max_steps) evaluates that step again for best.pt."""
        name = self.tc.best_metric
        if not name or name in metrics:
            return
        reported = ", ".join(f"{k} {v:.4g}" for k, v in sorted(metrics.items())) or "none"
        raise UserError(
            f"key 'train.best_metric': the task reports no metric {name!r} (at step {self.step} it "
            f"reports {reported}); training up to this step is saved in {saved}: set "
            "train.best_metric to one of those (or '') and run again to resume"
        )

    # ----- the loop -----------------------------------------------------------------------
    def fit(self) -> FitResult:
        tc, started, first_step = self.tc, time.time(), self.step
        self._announce()
        metrics_log = MetricsLog(self.run_dir, enabled=self.run.is_main, tensorboard=tc.tensorboard)
        metrics_log.drop_after(self.step)  # records of steps a crash lost are redone
        bar = tqdm(
            total=tc.max_steps,
            initial=self.step,
            disable=not (self.run.is_main and tc.progress),
            dynamic_ncols=True,
            desc="train",
        )
        batches = self._batches()
        window: dict[str, float] = {}
        window_start, window_steps = time.time(), 0
        self.model.train()
        self.stop_everywhere = False
        try:
            with self.stop:
                while self.step < tc.max_steps:
                    result = self._train_step(batches)
                    if result is not None:
                        self.step += 1
                        window_steps += 1
                        for key, value in result.items():
                            window[key] = window.get(key, 0.0) + value
                        bar.update(1)
                        if self.step % tc.log_every == 0 or self.step == tc.max_steps:
                            record = self._window_record(window, window_steps, time.time() - window_start)
                            metrics_log.write("train", self.step, record)
                            bar.set_postfix(
                                loss=f"{record['loss']:.3f}",
                                lr=f"{record['lr']:.2e}",
                                **{f"{self.unit_name}/s": f"{record[self.unit_name + '_per_s']:.0f}"},
                            )
                            window, window_start, window_steps = {}, time.time(), 0
                    if self.stop_everywhere:
                        self._stop_on_signal()
                    if result is not None:
                        self._save_and_evaluate(metrics_log)
            if self.step == first_step:
                self._nothing_to_train(metrics_log)
        finally:
            bar.close()
            metrics_log.close()
            self.directory.release()
        # A re-run that trained nothing keeps the summary of the run that did.
        if self.run.is_main and not (self.step == first_step and (self.run_dir / "summary.json").is_file()):
            self._write_summary(time.time() - started)
        model = self.eval_model()
        model.eval()
        return FitResult(model, self.last_metrics, self.run_dir, self.step, self.run)

    def _announce(self) -> None:
        if self.run.is_main:
            params = sum(p.numel() for p in self.model.parameters())
            self._print(
                f"config:\n{to_yaml(self.cfg)}model: {params:,} parameters on "
                f"{self.run.device} x{self.run.world_size}, {self.tc.precision}, "
                f"{self.run.grad_accum} micro-batch(es) per step, {self.threads} CPU thread(s) "
                f"({self.threads_why})"
            )

    def _write_summary(self, seconds: float) -> None:
        summary = {
            "step": self.step,
            "metrics": self.last_metrics,
            "train_seconds_this_run": round(seconds, 1),
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "device": str(self.run.device),
            "world_size": self.run.world_size,
            **peak_memory_gib(self.run.device),
        }
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    def _nothing_to_train(self, metrics_log: MetricsLog) -> None:
        """A finished run's command again: its result is that of the weights it finished with,
        as evaluated then (read back from metrics.jsonl at resume); evaluated only if that
        evaluation was lost (a crash between the save and the evaluation)."""
        self._print(
            f"nothing to train: the run in {self.run_dir} is at step {self.step} "
            f"(train.max_steps={self.tc.max_steps}); raise train.max_steps to train further"
        )
        if not self.last_metrics:
            metrics = self._evaluate_after_save(self.resumed_from)
            metrics_log.write("valid", self.step, metrics)
            self._print(f"step {self.step}: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))

    def _save_and_evaluate(self, metrics_log: MetricsLog) -> None:
        """Save first whenever an evaluation is due, so a failing evaluation loses nothing."""
        tc, last = self.tc, self.step == self.tc.max_steps
        evaluate = last or (tc.eval_every and self.step % tc.eval_every == 0)
        if not (evaluate or last or (tc.save_every and self.step % tc.save_every == 0)):
            return
        saved = self.save()
        if evaluate:
            metrics = self._evaluate_after_save(saved)
            metrics_log.write("valid", self.step, metrics)
            self._print(f"step {self.step}: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))

    def _stop_on_signal(self) -> None:
        saved = self.save()
        name = self.stop.name or "a signal on another rank"
        raise Interrupted(
            f"stopped by {name} at step {self.step}; checkpoint saved to {saved}. "
            "Run the same command again to resume.",
            self.stop.signum or 15,
        )

    def _window_record(self, window: dict[str, float], steps: int, seconds: float) -> dict[str, float]:
        units = window.pop(self.unit_name)
        record = {key: value / steps for key, value in window.items()}
        record[self.unit_name] = units
        record[self.unit_name + "_per_s"] = units / max(seconds, 1e-9)
        record["lr"] = self.scheduler.get_last_lr()[0]
        if self.run.device.type == "cuda":
            record.update(peak_memory_gib(self.run.device))
        return record


def fit(cfg: RunConfig, task: Task) -> FitResult:
    """Train `task` as `cfg.train`, `cfg.optim` and `cfg.schedule` say; see Runner."""
    return Runner(cfg, task).fit()
