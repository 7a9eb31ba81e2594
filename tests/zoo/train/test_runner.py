"""The runner: learning, exact resume, accumulation, NaN handling, bf16."""

import copy
from pathlib import Path

import pytest
import torch

from tasks.reverse.task import ReverseTask, make_batch
from zoo.config import UserError
from zoo.train import OptimConfig, ScheduleConfig, StepOutput, TrainingDiverged, fit
from zoo.train.checkpoint import load_checkpoint, step_checkpoints
from zoo.train.metrics_log import read_metrics


def final_weights(run_dir: Path) -> dict:
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])["model"]


def test_tiny_encoder_decoder_learns_to_reverse(tiny_cfg):
    cfg = tiny_cfg
    cfg.model.dim, cfg.model.ffn_dim = 64, 128
    cfg.model.num_layers = cfg.model.decoder_layers = 2
    cfg.data.batch_size, cfg.data.batches_per_epoch, cfg.data.valid_size = 64, 100, 256
    cfg.train.max_steps, cfg.train.log_every = 300, 50
    cfg.optim = OptimConfig(name="adam", lr=2e-3)
    cfg.schedule = ScheduleConfig(name="cosine", warmup_steps=30)
    result = fit(cfg, ReverseTask(cfg))
    assert result.metrics["token_acc"] >= 0.99
    summary = (result.run_dir / "summary.json").read_text()
    assert '"token_acc"' in summary and (result.run_dir / "config.yaml").is_file()


def test_resume_continues_exactly(tiny_cfg, tmp_path):
    """N steps + checkpoint + resume + N steps == 2N uninterrupted steps, dropout included."""
    cfg = tiny_cfg
    cfg.model.dropout = 0.2  # the RNG state must be restored for this to match
    cfg.data.batches_per_epoch = 3  # resume lands mid-epoch and crosses an epoch boundary
    whole = copy.deepcopy(cfg)
    whole.train.out_dir, whole.train.max_steps = str(tmp_path / "whole"), 8
    fit(whole, ReverseTask(whole))

    first = copy.deepcopy(cfg)
    first.train.out_dir, first.train.max_steps = str(tmp_path / "split"), 4
    fit(first, ReverseTask(first))
    second = copy.deepcopy(first)
    second.train.max_steps = 8
    fit(second, ReverseTask(second))

    losses = lambda d: [r["loss"] for r in read_metrics(d, "train")]  # noqa: E731
    assert losses(tmp_path / "split") == losses(tmp_path / "whole")
    split, uninterrupted = final_weights(tmp_path / "split"), final_weights(tmp_path / "whole")
    for name in uninterrupted:
        torch.testing.assert_close(split[name], uninterrupted[name], rtol=0, atol=0)


class FixedBatches(ReverseTask):
    """The reverse task, but training on a given list of batches."""

    def __init__(self, cfg, batches):
        super().__init__(cfg)
        self.batches = batches

    def train_batches(self, epoch, *, start=0, rank=0, world_size=1):
        return iter(self.batches[start:])


def test_gradient_accumulation_equals_one_big_batch(tiny_cfg, tmp_path):
    cfg = tiny_cfg
    cfg.train.max_steps = 1
    gen = torch.Generator().manual_seed(0)
    small = [make_batch(8, cfg, gen) for _ in range(3)]  # different token counts per micro-batch
    joined = type(small[0])(*(torch.cat([getattr(b, f) for b in small]) for f in
                              ("src", "tgt_in", "tgt_out")))
    accumulated = copy.deepcopy(cfg)
    accumulated.train.out_dir, accumulated.train.grad_accum = str(tmp_path / "acc"), 3
    fit(accumulated, FixedBatches(accumulated, small))
    big = copy.deepcopy(cfg)
    big.train.out_dir = str(tmp_path / "big")
    fit(big, FixedBatches(big, [joined]))
    a, b = final_weights(tmp_path / "acc"), final_weights(tmp_path / "big")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6)
    initial = ReverseTask(cfg)
    assert any(not torch.equal(a[n], p) for n, p in _initial_weights(cfg, initial).items())


def _initial_weights(cfg, task) -> dict:
    torch.manual_seed(cfg.train.seed)
    return task.build_model().state_dict()


class NanAt(ReverseTask):
    def __init__(self, cfg, bad_step):
        super().__init__(cfg)
        self.bad_step, self.calls = bad_step, 0

    def train_step(self, model, batch):
        self.calls += 1
        out = super().train_step(model, batch)
        if self.calls == self.bad_step:
            return StepOutput(out.loss * float("nan"), out.units, out.metrics)
        return out


def test_nan_loss_stops_naming_the_step(tiny_cfg):
    with pytest.raises(TrainingDiverged, match="at step 3"):
        fit(tiny_cfg, NanAt(tiny_cfg, bad_step=3))


def test_nan_loss_can_be_skipped(tiny_cfg):
    tiny_cfg.train.nan_policy = "skip"
    result = fit(tiny_cfg, NanAt(tiny_cfg, bad_step=2))
    assert result.step == tiny_cfg.train.max_steps
    assert all(torch.isfinite(p).all() for p in result.model.parameters())


def test_bf16_autocast_on_cpu_trains(tiny_cfg):
    tiny_cfg.train.precision = "bf16"
    tiny_cfg.train.max_steps = 3
    result = fit(tiny_cfg, ReverseTask(tiny_cfg))
    losses = [r["loss"] for r in read_metrics(result.run_dir, "train")]
    assert len(losses) == 3 and all(map(lambda v: v == v and abs(v) < 1e3, losses))


def test_ema_is_evaluated_and_checkpointed(tiny_cfg):
    tiny_cfg.train.ema_decay = 0.5
    result = fit(tiny_cfg, ReverseTask(tiny_cfg))
    state = load_checkpoint(step_checkpoints(result.run_dir / "checkpoints")[-1])
    ema = {k.removeprefix("module."): v for k, v in state["ema"].items() if k.startswith("module.")}
    assert ema.keys() == state["model"].keys()
    assert any(not torch.equal(state["model"][k], ema[k]) for k in ema)
    returned = result.model.state_dict()
    assert all(torch.equal(returned[k], ema[k]) for k in ema)  # evaluation used the EMA


def test_resume_refuses_optimizer_state_of_another_model(tiny_cfg):
    """Optimizer state is positional: a reordered model must fail at resume, not deep in step()."""
    fit(tiny_cfg, ReverseTask(tiny_cfg))
    tiny_cfg.optim = OptimConfig(name="adam", lr=1e-3)
    tiny_cfg.train.max_steps = 6
    path = step_checkpoints(Path(tiny_cfg.train.out_dir) / "checkpoints")[-1]
    state = load_checkpoint(path)
    model = ReverseTask(tiny_cfg).build_model()
    shapes = [p.shape for p in model.parameters()]
    first, other = 0, next(i for i, s in enumerate(shapes) if s != shapes[0])
    state["optimizer"]["state"] = {first: {"step": torch.tensor(1.0), "exp_avg": torch.zeros(shapes[other]),
                                           "exp_avg_sq": torch.zeros(shapes[other])}}
    torch.save(state, path)
    with pytest.raises(UserError, match="different model definition"):
        fit(tiny_cfg, ReverseTask(tiny_cfg))
