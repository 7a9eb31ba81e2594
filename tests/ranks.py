"""Training on several gloo ranks inside a test, as torchrun would start them on one machine:
a free port for the rendezvous and the body of each rank that `torch.multiprocessing.spawn`
starts (spawned children get the parent's sys.path, so a task class defined in a test folder
imports there too)."""

from __future__ import annotations

import os
import socket

import torch.distributed as dist

from zoo.train import fit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_rank(rank: int, world_size: int, port: int, cfg, task_class: type) -> None:
    """One rank training `task_class(cfg)`, its process group closed however it ends."""
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    try:
        fit(cfg, task_class(cfg))
    finally:
        dist.destroy_process_group()
