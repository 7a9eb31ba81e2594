"""torch.distributed set-up from torchrun's environment (env://)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from zoo.config import UserError


@dataclass
class DistEnv:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def pick_device(preference: str, local_rank: int = 0) -> torch.device:
    if preference == "auto":
        preference = "cuda" if torch.cuda.is_available() else "cpu"
    if preference == "cuda":
        if not torch.cuda.is_available():
            raise UserError("key 'train.device': cuda was asked for but no CUDA device is visible")
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    if preference == "cpu":
        return torch.device("cpu")
    raise UserError(f"key 'train.device': must be auto, cpu or cuda, not {preference!r}")


def init_distributed(device_preference: str) -> DistEnv:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*);
    a plain `python` run is a world of one. NCCL on GPUs, gloo on CPUs."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(device_preference, local_rank)
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method="env://")
    return DistEnv(rank, world_size, local_rank, device)


def all_reduce_sum(values: torch.Tensor, env: DistEnv) -> torch.Tensor:
    if env.enabled:
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def all_gather_objects(obj: object, env: DistEnv) -> list:
    if not env.enabled:
        return [obj]
    gathered: list = [None] * env.world_size
    dist.all_gather_object(gathered, obj)
    return gathered


def broadcast_object(obj: object, env: DistEnv) -> object:
    """Rank 0's `obj` on every rank (itself when not distributed)."""
    if not env.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier(env: DistEnv) -> None:
    if env.enabled:
        dist.barrier()


@contextlib.contextmanager
def main_process_first(env: DistEnv) -> Iterator[None]:
    """Let rank 0 run the block first (e.g. train a tokenizer into the run directory), then the
    other ranks (which then find its output instead of redoing the work)."""
    if not env.is_main:
        barrier(env)
    yield
    if env.is_main:
        barrier(env)
