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
