"""The ViT task through the real runner, the recipes, and the train/evaluate entry points (shims
over zoo.verbs)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
import torch

from tasks.vit import evaluate as evaluate_cli
from tasks.vit import train as train_cli
from tasks.vit.config import DataConfig, ModelConfig, ViTConfig
from tasks.vit.data import ImageData, TensorImages
from tasks.vit.figures import attention_rollout, confusion_matrix
from tasks.vit.spec import ViTSpec
from tasks.vit.task import ViTTask, build_model, num_parameters, soft_target_cross_entropy
from zoo.blocks import Encoder, attention_maps
from zoo.config import load_config, to_dict
from zoo.convert.timm_vit import zoo_to_timm
from zoo.train import RunContext, fit
from zoo.train.config import OptimConfig, ScheduleConfig, TrainConfig
from zoo.verbs.cli import run_verb

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "vit"


def _run(rank: int = 0, world_size: int = 1) -> RunContext:
    return RunContext(rank=rank, world_size=world_size, local_rank=rank, device=torch.device("cpu"))


def _random_images(n: int, seed: int = 0) -> TensorImages:
    gen = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8, generator=gen)
    return TensorImages(images, torch.arange(n) % 4)


def test_tiny_vit_overfits_a_batch_through_the_runner(tmp_path: Path) -> None:
    batch = _random_images(16)
    data = ImageData(batch, batch, ["a", "b", "c", "d"], 3, 8, (0.5,), (0.25,))
    cfg = ViTConfig(
        train=TrainConfig(
            out_dir=str(tmp_path),
            max_steps=80,
            log_every=80,
            progress=False,
            threads=1,
            tensorboard=False,
            resume=False,
        ),
        optim=OptimConfig(name="adamw", lr=3e-3, betas=[0.9, 0.999], eps=1e-8),
        schedule=ScheduleConfig(name="constant", warmup_steps=5),
        model=ModelConfig(
            image_size=8, patch_size=2, in_chans=3, num_classes=4, dim=32, encoder_layers=2, num_heads=2
        ),
        data=DataConfig(batch_size=16, crop_scale=[], label_smoothing=0.0),
    )
    result = fit(cfg, ViTTask(cfg, data))
    assert result.metrics["top1"] == 100.0  # labels are arbitrary: only memorising fits them
    assert result.metrics["loss"] < 0.1


def test_soft_target_loss_matches_torch_label_smoothing() -> None:
    logits = torch.randn(6, 5)
    labels = torch.tensor([0, 1, 2, 3, 4, 0])
    one_hot = torch.nn.functional.one_hot(labels, 5).float()
    ours = soft_target_cross_entropy(logits, one_hot, smoothing=0.1)
    reference = torch.nn.functional.cross_entropy(logits, labels, label_smoothing=0.1, reduction="sum")
    assert torch.allclose(ours, reference, atol=1e-5)


def test_train_batches_are_reproducible_and_resume_mid_epoch() -> None:
    cfg = ViTConfig(data=DataConfig(batch_size=4, mixup_alpha=0.8, cutmix_alpha=1.0))
    data = ImageData(_random_images(18), _random_images(4), ["a", "b", "c", "d"], 3, 8, (0.5,), (0.25,))
    cfg.model.in_chans, cfg.model.num_classes = 3, 4
    task = ViTTask(cfg, data)
    task.setup(_run())
    full = list(task.train_batches(1))
    assert len(full) == 4  # full batches only
    again = list(task.train_batches(1))
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(full, again))
    tail = list(task.train_batches(1, start=2))
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(full[2:], tail))
    assert not torch.equal(full[0][0], next(iter(task.train_batches(2)))[0])
    ranks = []
    for rank in range(2):
        task.setup(_run(rank, 2))
        ranks.append(list(task.train_batches(1)))
    assert len(ranks[0]) == len(ranks[1]) == 2
    assert not torch.equal(ranks[0][0][0], ranks[1][0][0])


def full_forward_everywhere(monkeypatch) -> None:
    """Every encoder layer runs for every token (the last one otherwise runs for the class token
    alone), so each layer's recorded maps are square."""
    full_forward = Encoder.forward
    monkeypatch.setattr(
        Encoder,
        "forward",
        lambda self, x, *, pad_mask=None, outputs=None: full_forward(self, x, pad_mask=pad_mask)[
            :, outputs or slice(None)
        ],
    )


def test_attention_rollout_follows_abnar_and_zuidema(monkeypatch) -> None:
    """Against the rollout written out per image from the recorded maps: each layer's
    head-averaged weights mixed half-and-half with the identity and renormalised, multiplied from
    the first layer up; the pooled rows' mean over the patch tokens, renormalised."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(image_size=8, patch_size=2, in_chans=1), mean=(0.3,), std=(0.4,)).eval()
    with torch.no_grad():  # peaked attention, so that a wrong order or mixing shows
        for layer in model.encoder.layers:
            layer.self_attn.qkv_proj.weight.mul_(6)
    images = torch.rand(3, 1, 8, 8)
    full_forward_everywhere(monkeypatch)
    with attention_maps(model.encoder) as maps:
        model(images)
    layers = [maps[f"layers.{i}.self_attn"][0] for i in range(len(model.encoder.layers))]
    n, p = layers[0].shape[-1], model.num_prefix
    assert model.pool == "avg"
    expected = []
    for b in range(len(images)):
        rollout = torch.eye(n)
        for weights in layers:
            mixed = 0.5 * weights[b].mean(dim=0) + 0.5 * torch.eye(n)
            rollout = (mixed / mixed.sum(dim=1, keepdim=True)) @ rollout
        patches = rollout[p:, p:].mean(dim=0)
        expected.append((patches / patches.sum()).reshape(4, 4))
    expected = torch.stack(expected)
    assert expected.max() > 1.3 * expected.min()  # not uniform: a map that ignores attention fails
    torch.testing.assert_close(attention_rollout(model, images), expected)


def test_confusion_matrix_counts_true_rows_against_predicted_columns() -> None:
    matrix = confusion_matrix(torch.tensor([0, 1, 1, 2]), torch.tensor([0, 1, 2, 2]), 3)
    assert matrix.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]


def test_rollout_with_the_class_token_alone_in_the_last_layer_equals_full_maps(monkeypatch) -> None:
    """The model runs its last layer for the class token only; the rollout read from that row
    equals the one over every row of the full maps."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(image_size=8, patch_size=2, in_chans=1), mean=(0.3,), std=(0.4,))
    images = torch.rand(3, 1, 8, 8)
    class_token_only = attention_rollout(model.eval(), images)
    full_forward_everywhere(monkeypatch)
    torch.testing.assert_close(attention_rollout(model, images), class_token_only)


def test_digits_recipe_equals_the_built_in_defaults() -> None:
    """An installed package has no configs/ folder: its defaults must be the same recipe."""
    from_file = load_config(ViTConfig, CONFIGS / "digits.yaml")
    assert to_dict(from_file) == to_dict(ViTConfig())


@pytest.mark.parametrize("recipe", ["vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch16_224"])
def test_imagenet_recipes_are_timms_architectures(recipe: str) -> None:
    import timm

    cfg = load_config(ViTConfig, CONFIGS / f"{recipe}.yaml")
    assert cfg.model.encoder_layers == 12
    # One layer keeps the test fast; every layer has the same shapes.
    ours = build_model(dataclasses.replace(cfg.model, encoder_layers=1), mean=(0.5,), std=(0.5,))
    reference = timm.create_model(recipe, pretrained=False, depth=1)
    assert {k: v.shape for k, v in zoo_to_timm(ours.state_dict()).items()} == {
        k: v.shape for k, v in reference.state_dict().items()
    }


def test_cifar_recipes_build() -> None:
    cifar10 = load_config(ViTConfig, CONFIGS / "cifar10.yaml")
    assert round(num_parameters(build_model(cifar10.model, mean=(0.5,), std=(0.5,))) / 1e5) == 63
    small = load_config(ViTConfig, CONFIGS / "cifar_small.yaml")
    assert small.model.image_size // small.model.patch_size == 8


def test_help_shows_the_vit_defaults(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        train_cli.main(["--help"])
    text = capsys.readouterr().out
    assert "--train.out_dir='runs/vit-digits'" in text and "--model.pool='avg'" in text


def test_train_entry_point_and_evaluate_cli(tmp_path: Path, capsys, monkeypatch) -> None:
    run = tmp_path / "run"
    train_cli.main(
        [
            f"--train.out_dir={run}",
            "--train.max_steps=3",
            "--train.progress=false",
            "--train.tensorboard=false",
            "--data.batch_size=32",
            "--train.eval_every=0",
        ]
    )
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert any(line.startswith("test top-1") for line in lines) and "configs/vit/cifar10.yaml" in out
    assert "python -m zoo classify vit" in out
    evaluate_cli.main([str(run), "--images", "3", "--limit=0"])
    figures = run / "figures"
    assert (figures / "confusion_matrix.png").stat().st_size > 1000
    # attention without input (a terminal on stdin): held-out test images
    monkeypatch.setattr("sys.stdin", _Terminal())
    rollout = figures / "attention_rollout.png"
    run_verb(ViTSpec(), "attention", [str(run), "--images=3", f"--output={rollout}"])
    assert rollout.stat().st_size > 1000
    reported = json.loads((run / "eval_test.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    assert reported["top1"] == pytest.approx(summary["metrics"]["top1"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_evaluate_help_lists_every_option(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        evaluate_cli.main(["--help"])
    text = capsys.readouterr().out
    assert all(
        f"--{name}" in text
        for name in (
            "run",
            "checkpoint",
            "output",
            "images",
            "data_dir",
            "path",
            "limit",
            "batch_size",
        )
    )
