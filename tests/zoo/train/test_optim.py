"""Optimizer groups: weight decay on matrices only, never on norms, biases or named exclusions."""

import torch
from torch import nn

from zoo.train.config import OptimConfig
from zoo.train.optim import build_optimizer


class WithExclusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.pos = nn.Parameter(torch.zeros(1, 3, 4))
        self.frozen = nn.Parameter(torch.zeros(4, 4), requires_grad=False)

    def no_weight_decay(self):
        return {"pos"}


def test_decay_only_on_matrices_not_named_in_no_weight_decay():
    model = WithExclusion()
    opt = build_optimizer(model, OptimConfig(name="adamw", weight_decay=0.1))
    names = {id(p): n for n, p in model.named_parameters()}
    groups = {g["weight_decay"]: sorted(names[id(p)] for p in g["params"]) for g in opt.param_groups}
    assert groups == {0.1: ["linear.weight"], 0.0: ["linear.bias", "norm.bias", "norm.weight", "pos"]}
    assert isinstance(opt, torch.optim.AdamW)


def test_adamw_step_decays_the_matrix_and_not_the_bias():
    model = nn.Linear(3, 3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = build_optimizer(model, OptimConfig(name="adamw", lr=0.1, weight_decay=0.5))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # only the decay moves anything
    opt.step()
    torch.testing.assert_close(model.weight, before["weight"] * (1 - 0.1 * 0.5))
    torch.testing.assert_close(model.bias, before["bias"])


class WithPretrainedPart(nn.Module):
    def __init__(self):
        super().__init__()
        self.pretrained = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def lr_scales(self):
        return {"pretrained.": 0.1}


def test_lr_scales_give_a_part_its_own_rate_under_the_schedule():
    model = WithPretrainedPart()
    opt = build_optimizer(model, OptimConfig(name="adam", lr=0.01))
    torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: 0.5
    )  # as the runner's schedules: one multiplier for all
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    for name, param in model.named_parameters():  # Adam's first step moves each weight by its rate
        rate = 0.01 * 0.5 * (0.1 if name.startswith("pretrained.") else 1.0)
        torch.testing.assert_close(before[name] - param.detach(), torch.full_like(param, rate))


def test_without_lr_scales_the_groups_are_the_two_of_old():
    opt = build_optimizer(nn.Linear(3, 3), OptimConfig(name="adam", lr=0.01))
    assert [(g["lr"], g["weight_decay"], len(g["params"])) for g in opt.param_groups] == [
        (0.01, 0.0, 1),
        (0.01, 0.0, 1),
    ]


def _noisy_steps(model: nn.Module, opt: torch.optim.Optimizer, steps: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p in model.parameters():
            p.grad = torch.randn(p.shape, generator=g)
        opt.step()


def test_fused_adamw_follows_torchs_reference_adamw_and_resumes_its_state():
    """The runner's (fused) AdamW takes the steps of torch's single-tensor AdamW, and picks up
    an optimizer state saved by it (runs saved before the fused kernel resume)."""
    torch.manual_seed(0)
    ours, reference = nn.Linear(8, 8), nn.Linear(8, 8)
    reference.load_state_dict(ours.state_dict())
    cfg = OptimConfig(name="adamw", lr=0.01, weight_decay=0.1)
    opt = build_optimizer(ours, cfg)
    assert opt.defaults["fused"]
    ref_opt = torch.optim.AdamW(
        [
            {"params": [reference.weight], "weight_decay": 0.1},
            {"params": [reference.bias], "weight_decay": 0.0},
        ],
        lr=0.01,
        betas=tuple(cfg.betas),
        eps=cfg.eps,
        foreach=False,
    )
    _noisy_steps(ours, opt, 5, seed=1)
    _noisy_steps(reference, ref_opt, 5, seed=1)
    torch.testing.assert_close(ours.state_dict(), reference.state_dict())

    resumed = build_optimizer(reference, cfg)
    resumed.load_state_dict(ref_opt.state_dict())
    _noisy_steps(ours, opt, 3, seed=2)
    _noisy_steps(reference, resumed, 3, seed=2)
    torch.testing.assert_close(ours.state_dict(), reference.state_dict())
