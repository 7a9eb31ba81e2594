"""FSDP2 (`torch.distributed.fsdp.fully_shard`) for the runner: `train.fsdp` under torchrun.

Which modules are sharded, each one unit (one all-gather before its forward, one reduce-scatter
of its gradients): what the model's optional `shard_units() -> list[nn.Module]` returns, else the
items of every outermost `nn.ModuleList` (the layers of every stack in zoo.blocks). The root is
sharded last and keeps the rest (embeddings, final norms, heads), so tied weights stay together.

Checkpoints read as those of an unsharded run: the model and optimizer states are gathered into
full, plain CPU tensors on rank 0, and the optimizer's keeps torch.optim's own layout (parameters
by position), so every verb loads the weights as always and a run may switch between DDP and FSDP
when it resumes. The Task protocol evaluates on rank 0 alone, which a sharded model cannot do (its
forward all-gathers from every rank): rank 0 keeps a plain copy of the model for evaluation,
refreshed from the gathered weights before each one.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard

from zoo.config import UserError
from zoo.train.distributed import DistEnv

# Full tensors, offloaded to the CPU: rank 0 receives them, the other ranks an empty dict.
GATHERED = StateDictOptions(full_state_dict=True, cpu_offload=True)


def shard_units(model: nn.Module) -> list[nn.Module]:
    """The modules to shard one by one before the root: `model.shard_units()` when the model
    defines it, else the items of every nn.ModuleList not inside another one."""
    if hasattr(model, "shard_units"):
        return list(model.shard_units())
    units: list[nn.Module] = []
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    for found in lists:
        if not any(other is not found and _contains(other, found) for other in lists):
            units.extend(found)
    return units


def _contains(outer: nn.Module, inner: nn.Module) -> bool:
    return any(m is inner for m in outer.modules())


class ShardedModel:
    """`model` sharded in place over the run's ranks (FSDP2), and rank 0's plain copy of it.

    Args:
        model: the built model on the run's device, with its initial (or resumed) weights.
        run: the ranks and the device; the mesh is the run's device type, not the default
            accelerator, so train.device=cpu shards on the CPU (gloo) even where a GPU is seen.
    """

    def __init__(self, model: nn.Module, run: DistEnv) -> None:
        # Copied before sharding: afterwards the parameters are DTensor shards.
        self.plain = copy.deepcopy(model) if run.is_main else None
        mesh = init_device_mesh(run.device.type, (run.world_size,))
        for unit in shard_units(model):
            fully_shard(unit, mesh=mesh)
        self.model: FSDPModule = fully_shard(model, mesh=mesh)

    def set_gradient_sync(self, enabled: bool) -> None:
        """FSDP2 has no `no_sync`: off for a step's non-final micro-batches, whose unsharded
        gradients then accumulate locally until the final one reduce-scatters their sum."""
        self.model.set_requires_gradient_sync(enabled)

    def model_state(self) -> dict[str, Tensor]:
        """The full weights as plain CPU tensors on rank 0, {} elsewhere. Every rank calls it."""
        return get_model_state_dict(self.model, options=GATHERED)

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict:
        """As `optimizer.state_dict()` of an unsharded run, on rank 0; {} elsewhere. Every rank
        calls it."""
        return by_position(get_optimizer_state_dict(self.model, optimizer, options=GATHERED))

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict, source: Path) -> None:
        """Load `state` (as `optimizer.state_dict()` gives it, full tensors): every rank holds
        it whole (each reads the checkpoint) and keeps its own shards."""
        named = by_name(state, optimizer, self.model, source)
        # Not strict: a parameter that never had a gradient has no state, as torch.optim allows.
        options = StateDictOptions(full_state_dict=True, strict=False)
        set_optimizer_state_dict(self.model, optimizer, named, options=options)
        # torch gave every parameter state first (a step with zero gradients and lr 0): drop it
        # where the checkpoint has none, or Adam would count one step too many for them.
        params = [param for group in optimizer.param_groups for param in group["params"]]
        for number, param in enumerate(params):
            if number not in state["state"]:
                optimizer.state.pop(param, None)

    def refresh_plain(self) -> None:
        """Give rank 0's plain copy the current weights. Every rank calls it."""
        weights = self.model_state()
        if self.plain is not None:
            self.plain.load_state_dict(weights)


def by_position(state: dict) -> dict:
    """torch.distributed.checkpoint's optimizer state (parameters by name) in the layout of
    `Optimizer.state_dict()`: parameters numbered in the order of the parameter groups."""
    if not state:
        return state
    number: dict[str, int] = {}
    groups = [
        {**group, "params": [number.setdefault(name, len(number)) for name in group["params"]]}
        for group in state["param_groups"]
    ]
    return {"state": {number[name]: value for name, value in state["state"].items()}, "param_groups": groups}


def by_name(state: dict, optimizer: torch.optim.Optimizer, model: nn.Module, source: Path) -> dict:
    """The inverse of `by_position` for `optimizer` over `model`'s parameters."""
    sizes = [len(group["params"]) for group in state["param_groups"]]
    own = [len(group["params"]) for group in optimizer.param_groups]
    if sizes != own:
        raise UserError(
            f"{source}: optimizer state of parameter groups of {sizes} parameters where this model "
            f"has {own}: the checkpoint comes from a different model definition"
        )
    name_of = {param: name for name, param in model.named_parameters()}
    names = {
        number: name_of[param]
        for saved, group in zip(state["param_groups"], optimizer.param_groups)
        for number, param in zip(saved["params"], group["params"])
    }
    groups = [{**group, "params": [names[n] for n in group["params"]]} for group in state["param_groups"]]
    return {"state": {names[n]: value for n, value in state["state"].items()}, "param_groups": groups}
