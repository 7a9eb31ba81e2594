"""ViT under pytest-benchmark (bench/conftest.py): zoo against timm's VisionTransformer on the same
weights, a training step (AdamW as each library's script builds it), forward + backward alone,
and inference; the contenders of bench.vit_speed."""

import pytest
import torch

from bench.vit_speed import PRESETS, contenders


@pytest.fixture(scope="module")
def vit(preset_of) -> tuple[str, dict, dict]:
    preset = preset_of("vit", PRESETS)
    return preset, *contenders(preset, torch.device("cpu"), compiled=False)


@pytest.mark.parametrize("library", ["zoo", "timm"])
@pytest.mark.parametrize("mode", ["train", "fwd+bwd", "infer"])
def test_step(measure, vit: tuple[str, dict, dict], precision: str, mode: str, library: str) -> None:
    preset, steps, setup = vit
    step = steps[f"{mode}/{precision}/{library}"]
    measure(step, f"vit {mode}", library, setup["batch"], unit="images", precision=precision, preset=preset)
