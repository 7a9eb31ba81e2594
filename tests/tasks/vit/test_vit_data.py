"""ViT data: bundled digits, reproducible augmentation, mixing, corrupt files, the CIFAR copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from tasks.vit.config import DataConfig, ViTConfig
from tasks.vit.data import ImageData, build_datasets, iterate
from tasks.vit.transforms import BatchMixer, SeededTransform, train_transform
from tests.faults.clirun import assert_refused, run
from zoo.config import ConfigError, UserError, load_config

AUGMENT = DataConfig(crop_scale=[0.3, 1.0], hflip=0.5, randaugment_ops=2, random_erasing=0.5)


def test_digits_are_bundled_and_split_without_overlap() -> None:
    data = build_datasets(DataConfig(), channels=1, num_classes=10)
    assert len(data.train) + len(data.test) == 1797
    assert 355 <= len(data.test) <= 365
    test_labels = torch.bincount(data.test.labels, minlength=10)
    assert test_labels.min() >= 34  # stratified: every class is in the test set
    train_rows = {tuple(img.flatten().tolist()) for img in data.train.images}
    overlap = sum(tuple(img.flatten().tolist()) in train_rows for img in data.test.images)
    assert overlap <= 2  # a couple of digits are pixel-identical in the source data
    assert data.train.images.dtype == torch.uint8 and data.train.images.max() == 255


def test_model_and_data_must_agree() -> None:
    with pytest.raises(UserError, match="in_chans"):
        build_datasets(DataConfig(), channels=3, num_classes=10)
    with pytest.raises(UserError, match="num_classes"):
        build_datasets(DataConfig(), channels=1, num_classes=100)
    with pytest.raises(UserError, match="data.dataset"):
        build_datasets(DataConfig(dataset="imagenet22k"), channels=3, num_classes=10)


def _rgb_examples(n: int = 6) -> list[tuple[torch.Tensor, int]]:
    gen = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=gen), i % 3) for i in range(n)]


def test_transforms_are_a_function_of_seed_epoch_and_index() -> None:
    examples = _rgb_examples()
    transform = train_transform(AUGMENT, 24)

    def epoch_images(seed: int, epoch: int) -> torch.Tensor:
        data = SeededTransform(examples, transform, seed)
        data.set_epoch(epoch)
        torch.manual_seed(epoch * 7 + seed)  # the global RNG must not matter
        return torch.stack([data[i][0] for i in range(len(data))])

    first = epoch_images(0, 0)
    assert first.shape == (6, 3, 24, 24) and first.dtype == torch.float32
    assert torch.equal(first, epoch_images(0, 0))
    assert not torch.equal(first, epoch_images(0, 1))
    assert not torch.equal(first, epoch_images(1, 0))
    # ... and the caller's random stream is left where it was.
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    epoch_images(0, 0)
    torch.manual_seed(3)
    SeededTransform(examples, transform, 0)[0]
    assert torch.equal(torch.rand(4), expected)


def test_mixer_gives_soft_targets_reproducibly() -> None:
    images = torch.rand(8, 3, 16, 16)
    labels = torch.arange(8) % 4
    mixer = BatchMixer(4, mixup_alpha=0.8, cutmix_alpha=1.0, prob=1.0)
    mixed, targets = mixer(images, labels, seed=5)
    again, targets_again = mixer(images, labels, seed=5)
    assert torch.equal(mixed, again) and torch.equal(targets, targets_again)
    assert targets.shape == (8, 4) and torch.allclose(targets.sum(-1), torch.ones(8))
    assert not torch.equal(mixed, images)
    plain, one_hot = BatchMixer(4, mixup_alpha=0, cutmix_alpha=0, prob=1.0)(images, labels, 5)
    assert plain is images and torch.equal(one_hot.argmax(-1), labels)


def _image_folder(root: Path) -> Path:
    for split in ("train", "val"):
        for cls in ("cat", "dog"):
            folder = root / split / cls
            folder.mkdir(parents=True)
            Image.new("RGB", (12, 10), (40, 80, 120)).save(folder / "good.png")
    bad = root / "val" / "dog" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 this is not really a JPEG")
    return bad


@pytest.mark.parametrize("workers", [0, 1])
def test_corrupt_image_error_names_the_file(tmp_path: Path, workers: int) -> None:
    bad = _image_folder(tmp_path)
    data = build_datasets(DataConfig(dataset="imagefolder", path=str(tmp_path)), channels=3, num_classes=2)
    assert isinstance(data, ImageData) and data.image_size is None
    loader = DataLoader(data.test, batch_size=None, num_workers=workers)
    with pytest.raises(UserError) as caught:
        list(iterate(loader))
    message = str(caught.value)
    assert str(bad) in message and "\n" not in message


def test_imagefolder_needs_its_path() -> None:
    with pytest.raises(UserError, match="data.path"):
        build_datasets(DataConfig(dataset="imagefolder"), channels=3, num_classes=2)


SHARED = Path(os.environ.get("ZOO_DATA_DIR", Path(__file__).resolve().parents[4] / "shared" / "data"))


@pytest.mark.data
@pytest.mark.skipif(
    not (SHARED / "cifar10" / "train").is_dir(),
    reason=f"CIFAR-10 image folders not found under {SHARED} (set ZOO_DATA_DIR)",
)
def test_cifar10_reads_the_shared_jpeg_folders() -> None:
    data = build_datasets(
        DataConfig(dataset="cifar10", data_dir=str(SHARED), download=False), channels=3, num_classes=10
    )
    assert (len(data.train), len(data.test)) == (50_000, 10_000)
    assert data.classes[:3] == ["airplane", "automobile", "bird"] and data.classes[-1] == "truck"
    image, label = data.test[0]
    assert image.size == (32, 32) and image.mode == "RGB" and label == 0


VIT_BAD = [
    ("--data.mean=[0.5,0.5]", "data.mean"),  # model.in_chans is 1: one value or none
    ("--data.std=[0.5,0.5,0.5,0.5]", "data.std"),
    ("--data.std=[0.0]", "data.std"),
    ("--data.std=[-1.0]", "data.std"),
    ("--data.crop_scale=[2,1]", "data.crop_scale"),
    ("--data.crop_scale=[0.8,0.5]", "data.crop_scale"),
    ("--data.crop_scale=[0,1]", "data.crop_scale"),
    ("--data.crop_scale=[0.5]", "data.crop_scale"),
    ("--data.randaugment_magnitude=99", "data.randaugment_magnitude"),
    ("--data.randaugment_magnitude=-1", "data.randaugment_magnitude"),
    ("--data.hflip=2", "data.hflip"),
    ("--data.hflip=-0.5", "data.hflip"),
    ("--data.random_erasing=1.5", "data.random_erasing"),
    ("--data.mix_prob=2", "data.mix_prob"),
    ("--data.mixup_alpha=-1", "data.mixup_alpha"),
    ("--data.label_smoothing=1", "data.label_smoothing"),
    ("--data.num_workers=-1", "data.num_workers"),
    ("--data.randaugment_ops=-1", "data.randaugment_ops"),
    ("--data.batch_size=0", "data.batch_size"),
]


@pytest.mark.parametrize(("override", "key"), VIT_BAD, ids=[o for o, _ in VIT_BAD])
def test_a_bad_data_option_is_refused_when_the_config_is_read(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^key '{key}': ") as err:
        load_config(ViTConfig, overrides=[override])
    assert "\n" not in str(err.value)


def test_normalisation_may_give_one_value_or_one_per_channel() -> None:
    load_config(ViTConfig, overrides=["--data.mean=[0.5]", "--data.std=[0.25]", "--data.crop_scale=[]"])
    rgb = ["--model.in_chans=3", "--data.mean=[0.5,0.4,0.3]", "--data.std=[0.2]", "--data.crop_scale=[1,1]"]
    load_config(ViTConfig, overrides=[*rgb, "--data.hflip=1", "--data.randaugment_magnitude=30"])
    with pytest.raises(ConfigError, match=r"^key 'data.mean': .*model.in_chans is 3"):
        load_config(ViTConfig, overrides=["--model.in_chans=3", "--data.mean=[0.5,0.5]"])


def test_mean_and_std_each_replace_only_the_data_sets_own() -> None:
    """[] keeps the data set's statistic: std alone once dropped the mean (and failed as 'got 0')."""
    digits = build_datasets(DataConfig(), channels=1, num_classes=10)
    data = build_datasets(DataConfig(std=[0.25]), channels=1, num_classes=10)
    assert data.mean == digits.mean and data.std == (0.25,)
    data = build_datasets(DataConfig(mean=[0.5]), channels=1, num_classes=10)
    assert data.mean == (0.5,) and data.std == digits.std


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("--data.mean=[0.5,0.5]", "data.mean"),
        ("--data.randaugment_magnitude=99", "data.randaugment_magnitude"),
    ],
)
def test_the_train_cli_refuses_a_bad_data_option_before_touching_the_run_directory(
    tmp_path: Path, override: str, key: str
) -> None:
    out = tmp_path / "run"
    args = ["--train.max_steps=1", "--train.threads=1", f"--train.out_dir={out}", "--data.randaugment_ops=2"]
    assert_refused(run("tasks.vit.train", *args, override), f"key '{key}'")
    assert not out.exists()
