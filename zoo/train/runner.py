"""The task-agnostic training loop.

It knows the Task protocol (zoo/train/task.py) and nothing of any task. It owns devices,
torchrun/DDP, bf16 autocast, gradient accumulation, clipping, optimizer and schedule, EMA,
evaluation, checkpoints with exact resume, metrics and the progress bar.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from zoo.config import UserError, to_yaml
from zoo.train.checkpoint import CheckpointManager
from zoo.train.config import RunConfig
from zoo.train.distributed import (DistEnv, all_gather_objects, all_reduce_sum, barrier,
                                   init_distributed)
from zoo.train.metrics_log import MetricsLog
from zoo.train.optim import build_optimizer
from zoo.train.schedules import build_schedule
from zoo.train.state import rng_state, seed_everything, set_rng_state
from zoo.train.task import StepOutput, Task

log = logging.getLogger("zoo.train")


class TrainingDiverged(UserError):
    """The loss became NaN or infinite."""


@dataclass
class FitResult:
    model: nn.Module      # the evaluated weights (the EMA copy when EMA is on), eval mode
    metrics: dict[str, float]
    run_dir: Path
    step: int


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
        return dataclasses.replace(obj, **{f.name: move_to(getattr(obj, f.name), device)
                                           for f in dataclasses.fields(obj) if f.init})
    return obj


class Runner:
    """One training run. Use `fit(cfg, task)`."""

    def __init__(self, cfg: RunConfig, task: Task) -> None:
        self.cfg, self.tc, self.task = cfg, cfg.train, task
        if self.tc.precision not in ("fp32", "bf16"):
            raise UserError(f"key 'train.precision': must be fp32 or bf16, not {self.tc.precision!r}")
        if self.tc.nan_policy not in ("stop", "skip"):
            raise UserError(f"key 'train.nan_policy': must be stop or skip, not {self.tc.nan_policy!r}")
        if self.tc.grad_accum < 1:
            raise UserError("key 'train.grad_accum': must be at least 1")
        if self.tc.threads > 0:
            torch.set_num_threads(self.tc.threads)
        self.env: DistEnv = init_distributed(self.tc.device)
        self.run_dir = Path(self.tc.out_dir)
        self.unit_name = getattr(task, "unit_name", "units")

        seed_everything(self.tc.seed)  # same initial weights on every rank
        self.model = task.build_model().to(self.env.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = build_optimizer(self.model, cfg.optim)
        self.scheduler = build_schedule(self.optimizer, cfg.schedule, self.tc.max_steps)
        self.ema = (AveragedModel(self.model, multi_avg_fn=get_ema_multi_avg_fn(self.tc.ema_decay),
                                  use_buffers=True) if self.tc.ema_decay > 0 else None)
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", keep_last=self.tc.keep_last,
                                             best_metric=self.tc.best_metric,
                                             best_mode=self.tc.best_mode)
        self.step, self.position, self.best = 0, DataPosition(), None
        self.last_metrics: dict[str, float] = {}
        seed_everything(self.tc.seed + self.env.rank)  # independent dropout per rank
        if self.tc.resume:
            self._resume()
        self.train_model = self._wrap(self.model)

    # ----- set-up -------------------------------------------------------------------------
    def _wrap(self, model: nn.Module) -> nn.Module:
        if self.tc.compile:
            model = torch.compile(model)
        if self.env.enabled:
            ids = [self.env.local_rank] if self.env.device.type == "cuda" else None
            model = DistributedDataParallel(model, device_ids=ids)
        return model

    def _resume(self) -> None:
        found = self.checkpoints.latest_valid()
        if found is None:
            return
        path, state = found
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._check_optimizer_state(path)
        self.scheduler.load_state_dict(state["scheduler"])
        if self.ema is not None and "ema" in state:
            self.ema.load_state_dict(state["ema"])
        self.step, self.best = state["step"], state.get("best")
        self.position = DataPosition(**state["position"])
        self.last_metrics = state.get("metrics", {})
        rngs = state["rng"]
        if len(rngs) == self.env.world_size:
            set_rng_state(rngs[self.env.rank])
        else:
            log.warning("checkpoint has RNG states of %d ranks, this run has %d: dropout will "
                        "differ from an uninterrupted run", len(rngs), self.env.world_size)
        self._print(f"resumed from {path} at step {self.step} "
                    f"(epoch {self.position.epoch}, batch {self.position.batch})")

    def _check_optimizer_state(self, path: Path) -> None:
        """Optimizer state is stored by parameter position, not name: a model whose parameters
        were reordered would load it silently and fail deep inside the first step."""
        for group in self.optimizer.param_groups:
            for param in group["params"]:
                for key, value in self.optimizer.state.get(param, {}).items():
                    if isinstance(value, torch.Tensor) and value.ndim and value.shape != param.shape:
                        raise UserError(f"{path}: optimizer state '{key}' has shape {tuple(value.shape)} "
                                        f"where this model has a parameter of {tuple(param.shape)}: "
                                        "the checkpoint comes from a different model definition")

    def _print(self, text: str) -> None:
        if self.env.is_main:
            tqdm.write(text)

    # ----- data ---------------------------------------------------------------------------
    def _batches(self) -> Iterator[Any]:
        """Yield batches forever, advancing epochs; `self.position` counts what was yielded."""
        while True:
            empty = True
            for batch in self.task.train_batches(self.position.epoch, start=self.position.batch,
                                                 rank=self.env.rank,
                                                 world_size=self.env.world_size):
                empty = False
                self.position.batch += 1
                yield batch
            if empty and self.position.batch == 0:
                raise UserError(f"the task yielded no training batches for epoch {self.position.epoch}")
            self.position = DataPosition(self.position.epoch + 1, 0)

    # ----- one optimizer step -------------------------------------------------------------
    def _autocast(self) -> contextlib.AbstractContextManager:
        return torch.autocast(self.env.device.type, dtype=torch.bfloat16,
                              enabled=self.tc.precision == "bf16")

    def _train_step(self, batches: Iterator[Any]) -> dict[str, float] | None:
        """Accumulate `grad_accum` micro-batches, normalise by their total units, step.

        With several micro-batches or ranks, gradients of summed losses are scaled by
        world_size / total units after backward: DDP averages over ranks, so the result is
        exactly d(sum of losses)/d(theta) / total units, the gradient of one batch holding every
        micro-batch of every rank.
        """
        k = self.tc.grad_accum
        # One micro-batch on one process knows its units before backward: divide the loss, not
        # every gradient afterwards.
        single = k == 1 and not self.env.enabled
        keys: list[str] = []
        totals: torch.Tensor | None = None
        for i in range(k):
            batch = move_to(next(batches), self.env.device)
            sync = self.env.enabled and i < k - 1
            with self.train_model.no_sync() if sync else contextlib.nullcontext():
                with self._autocast():
                    out: StepOutput = self.task.train_step(self.train_model, batch)
                (out.loss / out.units if single else out.loss).backward()
            keys = ["loss", "units", *out.metrics]
            values = self._stack([out.loss.detach(), out.units, *out.metrics.values()])
            totals = values if totals is None else totals + values
        sums = dict(zip(keys, all_reduce_sum(totals, self.env).tolist()))
        units = sums.pop("units")
        if units <= 0:
            raise UserError(f"step {self.step + 1}: the batches hold no {self.unit_name} to train on")
        if not math.isfinite(sums["loss"]):
            self.optimizer.zero_grad(set_to_none=True)
            message = f"loss is {sums['loss']} at step {self.step + 1}"
            if self.tc.nan_policy == "stop":
                raise TrainingDiverged(message + " (set train.nan_policy=skip to skip such steps)")
            self._print(message + ": step skipped")
            return None
        if not single:
            grads = [p.grad for p in self.params if p.grad is not None]
            torch._foreach_mul_(grads, self.env.world_size / units)
        grad_norm = (torch.nn.utils.clip_grad_norm_(self.params, self.tc.clip_norm).item()
                     if self.tc.clip_norm > 0 else None)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        result = {key: value / units for key, value in sums.items()}
        result[self.unit_name] = units
        if grad_norm is not None:
            result["grad_norm"] = grad_norm
        return result

    def _stack(self, values: list[float | torch.Tensor]) -> torch.Tensor:
        """One float64 vector of a micro-batch's sums: one all-reduce and one sync per step."""
        return torch.stack([torch.as_tensor(v).detach().to(self.env.device, torch.float64)
                            for v in values])

    # ----- evaluation and checkpoints -----------------------------------------------------
    def eval_model(self) -> nn.Module:
        return self.ema.module if self.ema is not None else self.model

    def evaluate(self) -> dict[str, float]:
        model = self.eval_model()
        model.eval()
        with torch.no_grad(), self._autocast():
            metrics = {k: float(v) for k, v in self.task.evaluate(model).items()}
        self.model.train()
        self.last_metrics = metrics
        return metrics

    def save(self) -> None:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "position": dataclasses.asdict(self.position),
            "rng": all_gather_objects(rng_state(), self.env),
            "best": self.best,
            "metrics": self.last_metrics,
            "config": to_yaml(self.cfg),
        }
        if self.ema is not None:
            state["ema"] = self.ema.state_dict()
        if self.env.is_main:
            self.best = self.checkpoints.save(state, self.step, self.last_metrics)
        barrier(self.env)

    # ----- the loop -----------------------------------------------------------------------
    def fit(self) -> FitResult:
        tc, started = self.tc, time.time()
        if self.env.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "config.yaml").write_text(to_yaml(self.cfg))
            params = sum(p.numel() for p in self.model.parameters())
            self._print(f"config:\n{to_yaml(self.cfg)}model: {params:,} parameters on "
                        f"{self.env.device} x{self.env.world_size}, {tc.precision}")
        metrics_log = MetricsLog(self.run_dir, enabled=self.env.is_main, tensorboard=tc.tensorboard)
        bar = tqdm(total=tc.max_steps, initial=self.step, disable=not (self.env.is_main and tc.progress),
                   dynamic_ncols=True, desc="train")
        batches = self._batches()
        window: dict[str, float] = {}
        window_start, window_steps = time.time(), 0
        self.model.train()
        try:
            while self.step < tc.max_steps:
                result = self._train_step(batches)
                if result is None:
                    continue
                self.step += 1
                window_steps += 1
                for key, value in result.items():
                    window[key] = window.get(key, 0.0) + value
                bar.update(1)
                if self.step % tc.log_every == 0 or self.step == tc.max_steps:
                    record = self._window_record(window, window_steps, time.time() - window_start)
                    metrics_log.write("train", self.step, record)
                    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}",
                                    **{f"{self.unit_name}/s": f"{record[self.unit_name + '_per_s']:.0f}"})
                    window, window_start, window_steps = {}, time.time(), 0
                last = self.step == tc.max_steps
                if last or (tc.eval_every and self.step % tc.eval_every == 0):
                    metrics = self.evaluate()
                    metrics_log.write("valid", self.step, metrics)
                    self._print(f"step {self.step}: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
                if last or (tc.save_every and self.step % tc.save_every == 0):
                    self.save()
            if not self.last_metrics:  # resumed a finished run
                self.last_metrics = self.evaluate()
        finally:
            bar.close()
            metrics_log.close()
        if self.env.is_main:
            summary = {"step": self.step, "metrics": self.last_metrics,
                       "train_seconds_this_run": round(time.time() - started, 1),
                       "parameters": sum(p.numel() for p in self.model.parameters()),
                       "device": str(self.env.device), "world_size": self.env.world_size}
            (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        model = self.eval_model()
        model.eval()
        return FitResult(model, self.last_metrics, self.run_dir, self.step)

    def _window_record(self, window: dict[str, float], steps: int, seconds: float) -> dict[str, float]:
        units = window.pop(self.unit_name)
        record = {key: value / steps for key, value in window.items()}
        record[self.unit_name] = units
        record[self.unit_name + "_per_s"] = units / max(seconds, 1e-9)
        record["lr"] = self.scheduler.get_last_lr()[0]
        return record


def fit(cfg: RunConfig, task: Task) -> FitResult:
    """Train `task` as `cfg.train`, `cfg.optim` and `cfg.schedule` say; see Runner."""
    return Runner(cfg, task).fit()
