"""The runner: learning, exact resume, accumulation with one and two loss terms, NaN handling,
bf16, EMA, evaluation context."""

import copy
import json
from pathlib import Path

import pytest
import torch
from toy import Batch, ToyTask, make_batch

from zoo.config import UserError, to_yaml
from zoo.train import OptimConfig, ScheduleConfig, Term, TrainingDiverged, fit
from zoo.train.checkpoint import load_checkpoint, step_checkpoints
from zoo.train.metrics_log import read_metrics


def final_weights(run_dir: Path) -> dict:
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])["model"]


def test_toy_task_learns(tiny_cfg):
    tiny_cfg.train.max_steps, tiny_cfg.train.log_every = 150, 50
    tiny_cfg.optim = OptimConfig(name="adam", lr=1e-2)
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    assert result.metrics["token_acc"] >= 0.95
    assert '"token_acc"' in (result.run_dir / "summary.json").read_text()


def test_the_summary_reports_the_processes_peak_memory_in_gib(tiny_cfg):
    tiny_cfg.train.max_steps = 2
    summary = json.loads((fit(tiny_cfg, ToyTask(tiny_cfg)).run_dir / "summary.json").read_text())
    status = Path("/proc/self/status").read_text()
    peak_kib = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
    # the kernel's peak now, which can only have grown since the summary, and not by 1024x (a unit slip)
    assert peak_kib / 2**20 / 2 <= summary["peak_rss_gib"] <= peak_kib / 2**20
    assert "peak_cuda_gib" not in summary  # a CPU run


@pytest.mark.parametrize("ema_decay", [0.0, 0.6])
def test_resume_continues_exactly(tiny_cfg, tmp_path, ema_decay):
    """N steps + checkpoint + resume + N steps == 2N uninterrupted steps, dropout included, and
    the EMA of the weights too when one is kept."""
    cfg = tiny_cfg
    cfg.dropout = 0.3  # the RNG state must be restored for this to match
    cfg.train.ema_decay = ema_decay
    cfg.data.batches_per_epoch = 3  # resume lands mid-epoch and crosses an epoch boundary
    whole = copy.deepcopy(cfg)
    whole.train.out_dir, whole.train.max_steps = str(tmp_path / "whole"), 8
    fit(whole, ToyTask(whole))
    first = copy.deepcopy(cfg)
    first.train.out_dir, first.train.max_steps = str(tmp_path / "split"), 4
    fit(first, ToyTask(first))
    second = copy.deepcopy(first)
    second.train.max_steps = 8
    fit(second, ToyTask(second))

    losses = lambda d: [r["loss"] for r in read_metrics(d, "train")]  # noqa: E731
    assert losses(tmp_path / "split") == losses(tmp_path / "whole")
    split, uninterrupted = final_weights(tmp_path / "split"), final_weights(tmp_path / "whole")
    for name in uninterrupted:
        torch.testing.assert_close(split[name], uninterrupted[name], rtol=0, atol=0)
    if ema_decay:
        last = lambda d: load_checkpoint(step_checkpoints(d / "checkpoints")[-1])  # noqa: E731
        split_ema, whole_ema = (
            ema_weights_of(last(tmp_path / "split")),
            ema_weights_of(last(tmp_path / "whole")),
        )
        assert split_ema.keys() == whole_ema.keys()
        for name in whole_ema:
            torch.testing.assert_close(split_ema[name], whole_ema[name], rtol=0, atol=0)


def test_a_run_extended_on_resume_cools_down_to_its_new_end(tiny_cfg):
    """The schedule may change on resume: 4 steps at a constant rate, then resumed to 8 with a
    4-step cooldown, the logged rate (the next step's) ramps down to 0 at the new end."""
    tiny_cfg.train.max_steps, tiny_cfg.train.log_every = 4, 1
    tiny_cfg.optim = OptimConfig(name="adam", lr=1e-2)
    tiny_cfg.schedule = ScheduleConfig(name="constant", warmup_steps=0)
    fit(tiny_cfg, ToyTask(tiny_cfg))
    tiny_cfg.train.max_steps, tiny_cfg.schedule.cooldown_steps = 8, 4
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    rates = [r["lr"] for r in read_metrics(result.run_dir, "train")]
    assert rates == pytest.approx([1e-2] * 4 + [7.5e-3, 5e-3, 2.5e-3, 0.0])


class FixedBatches(ToyTask):
    """The toy task, training on a given list of batches."""

    def __init__(self, cfg, batches):
        super().__init__(cfg)
        self.batches = batches

    def train_batches(self, epoch, *, start=0):
        return iter(self.batches[start:])


def _joined(batches: list[Batch]) -> Batch:
    return Batch(*(torch.cat([getattr(b, f) for b in batches]) for f in ("tokens", "tags", "label")))


@pytest.mark.parametrize("two_terms", [False, True])
def test_accumulation_equals_one_big_batch(tiny_cfg, tmp_path, two_terms):
    """3 micro-batches with different token counts == their join, for one term and for two
    terms normalised by different units (tokens and sequences)."""
    cfg = tiny_cfg
    cfg.train.max_steps, cfg.two_terms = 1, two_terms
    gen = torch.Generator().manual_seed(0)
    small = [make_batch(cfg, gen, size) for size in (5, 8, 3)]
    accumulated = copy.deepcopy(cfg)
    accumulated.train.out_dir, accumulated.train.grad_accum = str(tmp_path / "acc"), 3
    fit(accumulated, FixedBatches(accumulated, small))
    big = copy.deepcopy(cfg)
    big.train.out_dir = str(tmp_path / "big")
    fit(big, FixedBatches(big, [_joined(small)]))
    a, b = final_weights(tmp_path / "acc"), final_weights(tmp_path / "big")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6)
    torch.manual_seed(cfg.train.seed)
    initial = ToyTask(cfg).build_model().state_dict()
    trained_heads = ["tagger.weight", "classifier.weight"] if two_terms else ["tagger.weight"]
    assert all(not torch.equal(a[name], initial[name]) for name in trained_heads)


class DerivedAccumulation(FixedBatches):
    """A task that derives its micro-batches per step from its recipe (as translation does
    from a token budget)."""

    def grad_accum(self, world_size):
        return 3 // world_size


def test_a_derived_accumulation_lives_in_the_run_not_the_recipe(tiny_cfg, tmp_path):
    """The task's derived accumulation trains as train.grad_accum would; config.yaml and the
    checkpoint's config stay the recipe as given, so a resume sees no changed recipe."""
    tiny_cfg.train.max_steps = 1
    gen = torch.Generator().manual_seed(0)
    small = [make_batch(tiny_cfg, gen, size) for size in (5, 8, 3)]
    derived = copy.deepcopy(tiny_cfg)
    derived.train.out_dir = str(tmp_path / "derived")
    recipe = to_yaml(derived)
    result = fit(derived, DerivedAccumulation(derived, small))
    assert result.run.grad_accum == 3 and derived.train.grad_accum == 1
    assert (result.run_dir / "config.yaml").read_text() == recipe
    assert load_checkpoint(step_checkpoints(result.run_dir / "checkpoints")[-1])["config"] == recipe
    configured = copy.deepcopy(tiny_cfg)
    configured.train.out_dir, configured.train.grad_accum = str(tmp_path / "configured"), 3
    fit(configured, FixedBatches(configured, small))
    a, b = final_weights(tmp_path / "derived"), final_weights(tmp_path / "configured")
    for name in a:
        torch.testing.assert_close(a[name], b[name])


def test_two_terms_are_each_normalised_by_their_own_units(tiny_cfg):
    """The logged loss is tag_loss + cls_loss, each a mean over its own units."""
    tiny_cfg.two_terms, tiny_cfg.train.max_steps = True, 1
    batch = make_batch(tiny_cfg, torch.Generator().manual_seed(1), 6)
    result = fit(tiny_cfg, FixedBatches(tiny_cfg, [batch]))
    record = read_metrics(result.run_dir, "train")[0]
    torch.manual_seed(tiny_cfg.train.seed)
    task = ToyTask(tiny_cfg)
    terms = task.train_step(task.build_model(), batch)
    units = task.units(batch)
    assert record["tag_loss"] == pytest.approx(terms["tag"].loss.item() / units["tag"], rel=1e-6)
    assert record["cls_loss"] == pytest.approx(terms["cls"].loss.item() / units["cls"], rel=1e-6)
    assert record["loss"] == pytest.approx(record["tag_loss"] + record["cls_loss"], rel=1e-9)
    assert record["tokens"] == units["tokens"]


class NanAt(ToyTask):
    def __init__(self, cfg, bad_steps):
        super().__init__(cfg)
        self.bad_steps, self.calls = set(bad_steps), 0

    def train_step(self, model, batch):
        self.calls += 1
        terms = super().train_step(model, batch)
        if self.calls in self.bad_steps:
            return {k: Term(t.loss * float("nan"), t.metrics) for k, t in terms.items()}
        return terms


def test_nan_loss_stops_naming_the_step(tiny_cfg):
    with pytest.raises(TrainingDiverged, match="at step 3"):
        fit(tiny_cfg, NanAt(tiny_cfg, bad_steps=[3]))


def test_nan_loss_can_be_skipped(tiny_cfg):
    tiny_cfg.train.nan_policy = "skip"
    result = fit(tiny_cfg, NanAt(tiny_cfg, bad_steps=[2]))
    assert result.step == tiny_cfg.train.max_steps
    assert all(torch.isfinite(p).all() for p in result.model.parameters())


def test_skipping_gives_up_after_nan_max_skips_in_a_row(tiny_cfg):
    tiny_cfg.train.nan_policy, tiny_cfg.train.nan_max_skips = "skip", 3
    tiny_cfg.train.max_steps = 100
    with pytest.raises(TrainingDiverged, match="3 steps in a row"):
        fit(tiny_cfg, NanAt(tiny_cfg, bad_steps=range(5, 10**6)))


def test_skipping_never_continues_from_non_finite_weights(tiny_cfg):
    class PoisonedWeights(NanAt):
        def train_step(self, model, batch):
            if self.calls + 1 in self.bad_steps:
                with torch.no_grad():
                    next(model.parameters()).fill_(float("nan"))
            return super().train_step(model, batch)

    tiny_cfg.train.nan_policy = "skip"
    with pytest.raises(TrainingDiverged, match="weights themselves are no longer finite"):
        fit(tiny_cfg, PoisonedWeights(tiny_cfg, bad_steps=[2]))


def test_bf16_precision_runs_training_and_evaluation_under_autocast(tiny_cfg):
    """Fails if train.precision were ignored: the logits would be float32."""
    tiny_cfg.train.precision, tiny_cfg.train.max_steps = "bf16", 3
    task = ToyTask(tiny_cfg)
    fit(tiny_cfg, task)
    assert task.seen_dtypes and set(task.seen_dtypes) == {torch.bfloat16}
    fp32 = ToyTask(tiny_cfg)
    tiny_cfg.train.precision, tiny_cfg.train.out_dir = "fp32", tiny_cfg.train.out_dir + "-fp32"
    fit(tiny_cfg, fp32)
    assert set(fp32.seen_dtypes) == {torch.float32}


def test_evaluation_runs_without_autograd(tiny_cfg):
    task = ToyTask(tiny_cfg)
    fit(tiny_cfg, task)
    assert task.eval_grad_enabled == [False]


def ema_weights_of(state: dict) -> dict:
    return {k.removeprefix("module."): v for k, v in state["ema"].items() if k.startswith("module.")}


def test_ema_follows_its_decay_is_evaluated_and_checkpointed(tiny_cfg):
    """Saved every step: the EMA starts as the first step's weights, then each step's is
    d * the previous EMA + (1 - d) * that step's weights, with d = train.ema_decay; evaluation and
    the returned model use it."""
    decay = 0.7
    tiny_cfg.train.ema_decay, tiny_cfg.train.max_steps = decay, 5
    tiny_cfg.train.save_every, tiny_cfg.train.keep_last = 1, 10
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    states = [load_checkpoint(path) for path in step_checkpoints(result.run_dir / "checkpoints")]
    assert [s["step"] for s in states] == [1, 2, 3, 4, 5]
    floats = [k for k, v in states[0]["model"].items() if v.is_floating_point()]
    first = ema_weights_of(states[0])
    assert all(torch.equal(first[k], states[0]["model"][k]) for k in floats)
    for before, now in zip(states, states[1:]):
        ema, previous = ema_weights_of(now), ema_weights_of(before)
        for k in floats:
            torch.testing.assert_close(ema[k], decay * previous[k] + (1 - decay) * now["model"][k])
        assert any(not torch.equal(ema[k], now["model"][k]) for k in floats)
    returned = result.model.state_dict()
    last = ema_weights_of(states[-1])
    assert all(torch.equal(returned[k], last[k]) for k in last)  # evaluation used the EMA


def test_resume_refuses_optimizer_state_of_another_model(tiny_cfg):
    """Optimizer state is positional: a reordered model must fail at resume, not deep in step()."""
    fit(tiny_cfg, ToyTask(tiny_cfg))
    tiny_cfg.optim = OptimConfig(name="adam", lr=1e-3)
    path = step_checkpoints(Path(tiny_cfg.train.out_dir) / "checkpoints")[-1]
    state = load_checkpoint(path)
    shapes = [p.shape for p in ToyTask(tiny_cfg).build_model().parameters()]
    other = next(i for i, s in enumerate(shapes) if s != shapes[0])
    state["optimizer"]["state"] = {0: {"momentum_buffer": torch.zeros(shapes[other])}}
    torch.save(state, path)
    tiny_cfg.optim = OptimConfig(name="sgd", lr=0.5, momentum=0.9)
    tiny_cfg.train.max_steps = 6
    with pytest.raises(UserError, match="different model definition"):
        fit(tiny_cfg, ToyTask(tiny_cfg))


def test_init_from_starts_from_the_weights_with_a_fresh_optimizer(tiny_cfg, tmp_path):
    source = copy.deepcopy(tiny_cfg)
    source.train.out_dir, source.train.max_steps = str(tmp_path / "source"), 20
    fit(source, ToyTask(source))
    frozen = copy.deepcopy(tiny_cfg)  # lr 0: the weights it ends with are the ones it started from
    frozen.train.out_dir, frozen.train.max_steps = str(tmp_path / "frozen"), 2
    frozen.train.init_from, frozen.optim = str(tmp_path / "source"), OptimConfig(name="adam", lr=0.0)
    fit(frozen, ToyTask(frozen))
    trained, started = final_weights(tmp_path / "source"), final_weights(tmp_path / "frozen")
    for name in trained:
        torch.testing.assert_close(started[name], trained[name], rtol=0, atol=0)
    state = load_checkpoint(step_checkpoints(tmp_path / "frozen" / "checkpoints")[-1])
    assert state["step"] == 2  # a new run, not a resume of the source's 20 steps


def test_init_from_a_missing_run_names_it(tiny_cfg, tmp_path):
    tiny_cfg.train.init_from = str(tmp_path / "nowhere")
    with pytest.raises(UserError, match="nowhere"):
        fit(tiny_cfg, ToyTask(tiny_cfg))
