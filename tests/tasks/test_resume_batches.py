"""Every task: a run interrupted after k batches and resumed sees the batches of an uninterrupted
run, random choices (order, masking, augmentation, <unk> replacement, synthetic data) included.

The resumed side is a fresh task object asked for `train_batches(epoch, start=k)`, as the runner
asks after loading a checkpoint; the global RNGs are seeded differently on each side, since
batches must depend on (seed, epoch, example) alone.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tasks.bert.finetune.task import FinetuneTask
from tasks.bert.task import BertTask
from tasks.gpt.config import GPTConfig
from tasks.gpt.task import GPTTask
from tasks.parsing.config import DataConfig as ParsingData
from tasks.parsing.task import ParsingTask
from tasks.reverse.config import ReverseConfig
from tasks.reverse.task import ReverseTask
from tasks.translation.config import TranslationConfig
from tasks.translation.task import TranslationTask
from tasks.vit.config import DataConfig as ViTData
from tasks.vit.config import ModelConfig as ViTModel
from tasks.vit.config import ViTConfig
from tasks.vit.data import ImageData, TensorImages
from tasks.vit.task import ViTTask
from tests.tasks.bert.conftest import tiny_recipe
from tests.tasks.bert.finetune.conftest import tiny_config as tiny_finetune
from tests.tasks.parsing.conftest import tiny_config
from zoo.config import load_config
from zoo.train import RunContext

EPOCH, START = 1, 2


def translation(out: Path) -> TranslationTask:
    overrides = ["data.synthetic_train=300", "data.synthetic_valid=10", "data.synthetic_test=10"]
    cfg = load_config(TranslationConfig, None, [f"train.out_dir={out}", *overrides, "data.max_tokens=400"])
    return TranslationTask(cfg)


def parsing(out: Path) -> ParsingTask:
    cfg = tiny_config("chart", str(out), 1)
    cfg.data = ParsingData(source="grammar", grammar_sizes=[60, 4, 4], max_tokens=120, unk_prob=0.5)
    return ParsingTask(cfg)


def vit(out: Path) -> ViTTask:
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (24, 3, 8, 8), dtype=torch.uint8, generator=generator)
    data = TensorImages(images, torch.arange(24) % 4)
    cfg = ViTConfig(
        model=ViTModel(image_size=8, patch_size=2, in_chans=3, num_classes=4, dim=32, num_heads=2),
        data=ViTData(batch_size=4, crop_scale=[0.5, 1.0], hflip=0.5, mixup_alpha=0.8, cutmix_alpha=1.0),
    )
    cfg.train.out_dir = str(out)
    return ViTTask(cfg, ImageData(data, data, ["a", "b", "c", "d"], 3, 8, (0.5,), (0.25,)))


def bert(out: Path) -> BertTask:
    return BertTask(tiny_recipe(str(out), synthetic_train=60))


def bert_finetune(out: Path) -> FinetuneTask:
    return FinetuneTask(tiny_finetune("span", str(out), "--data.batch_size=4"))


def gpt(out: Path) -> GPTTask:
    overrides = [
        "data.synthetic_train=60",
        "data.synthetic_valid=5",
        "data.vocab_size=300",
        "data.batch_size=4",
    ]
    return GPTTask(load_config(GPTConfig, None, [f"train.out_dir={out}", *overrides]))


def reverse(out: Path) -> ReverseTask:
    cfg = ReverseConfig()
    cfg.train.out_dir = str(out)
    cfg.data.batch_size, cfg.data.batches_per_epoch, cfg.data.valid_size = 8, 5, 8
    return ReverseTask(cfg)


TASKS: dict[str, Callable[[Path], Any]] = {
    "translation": translation,
    "parsing": parsing,
    "vit": vit,
    "bert": bert,
    "bert_finetune": bert_finetune,
    "gpt": gpt,
    "reverse": reverse,
}


def _ready(build: Callable[[Path], Any], out: Path, global_seed: int) -> Any:
    for seed_global in (torch.manual_seed, np.random.seed, random.seed):
        seed_global(global_seed)
    task = build(out)
    seed, cpu = task.cfg.train.seed, torch.device("cpu")
    task.setup(RunContext(rank=0, world_size=1, local_rank=0, device=cpu, run_dir=out, seed=seed))
    return task


def assert_same(a: Any, b: Any, where: str = "batch") -> None:
    """Equal tensors (values and dtype) inside equal dataclasses, tuples, lists and dicts."""
    assert type(a) is type(b), where
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), where
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    else:
        assert a == b, where


@pytest.mark.parametrize("name", list(TASKS))
def test_a_resumed_run_sees_the_batches_of_an_uninterrupted_one(name, tmp_path):
    out = tmp_path / "run"
    whole = list(_ready(TASKS[name], out, 1).train_batches(EPOCH))
    assert len(whole) > START + 1, f"{name}: too few batches to resume inside the epoch"
    resumed = list(_ready(TASKS[name], out, 2).train_batches(EPOCH, start=START))
    assert len(resumed) == len(whole) - START
    for i, (got, want) in enumerate(zip(resumed, whole[START:])):
        assert_same(got, want, f"{name} batch {START + i}")
    with pytest.raises(AssertionError):  # and the next epoch does not repeat this one
        assert_same(next(iter(_ready(TASKS[name], out, 1).train_batches(EPOCH + 1))), whole[0])
