"""Image classification data sets: raw (image, label) examples plus what the model must know.

digits: scikit-learn's bundled handwritten digits (1,797 real 8x8 images shipped inside the
package, so it works offline), split 80/20 stratified with a fixed seed.
cifar10 / cifar100: `<data_dir>/<name>/{train,test}` in ImageFolder layout when present (the
JPEG copy in the shared data folder), else torchvision's loader (downloads when allowed).
mnist / fashion_mnist: torchvision's loaders. imagefolder: `<path>/train` and `<path>/val`
(or `test`), the ImageNet layout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch import Tensor
from torch.utils.data import Dataset
from torchvision import datasets

from tasks.vit.config import DataConfig
from zoo.config import UserError
from zoo.data.paths import resolve_data_dir

DOWNLOAD_ROOT = Path.home() / ".cache" / "zoo" / "data"


@dataclass
class ImageData:
    """Train and test examples (PIL images or uint8 (C, H, W) tensors, int labels).

    image_size: the native side when every image has it, None when sizes vary.
    mean, std: per-channel statistics used to normalise inputs (stored in the model).
    """

    train: Dataset
    test: Dataset
    classes: list[str]
    channels: int
    image_size: int | None
    mean: tuple[float, ...]
    std: tuple[float, ...]


class TensorImages(Dataset):
    """uint8 images (N, C, H, W) with labels (N,), as a Dataset of (image, label)."""

    def __init__(self, images: Tensor, labels: Tensor) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        return self.images[index], int(self.labels[index])


def load_image(path: str, mode: str = "RGB") -> Image.Image:
    """Open an image file fully; a file PIL cannot decode is a UserError naming it."""
    try:
        with Image.open(path) as image:
            return image.convert(mode)
    except (OSError, SyntaxError, ValueError) as err:
        raise UserError(f"{path}: cannot read image ({err})") from None


def iterate(loader: Iterable[Any]) -> Iterator[Any]:
    """Iterate a DataLoader, turning a UserError raised in a worker back into its one line.

    A worker's exception comes back with the worker traceback folded into the message; the
    user needs the last line (which names the file).
    """
    try:
        yield from loader
    except UserError as err:
        lines = str(err).strip().splitlines()
        raise UserError(lines[-1].split("UserError: ", 1)[-1]) from None


def _digits(cfg: DataConfig, channels: int) -> ImageData:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    # Intensities are 0..16; scale to the 0..255 range of ordinary 8-bit images.
    images = torch.from_numpy(digits.images * (255 / 16)).round().to(torch.uint8)[:, None]
    labels = torch.from_numpy(digits.target)
    train_idx, test_idx = train_test_split(
        range(len(labels)), test_size=0.2, random_state=0, stratify=digits.target
    )
    train = TensorImages(images[train_idx], labels[train_idx])
    mean = train.images.float().mean().item() / 255
    std = train.images.float().std().item() / 255
    return ImageData(
        train,
        TensorImages(images[test_idx], labels[test_idx]),
        [str(d) for d in range(10)],
        1,
        8,
        (mean,),
        (std,),
    )


def _image_folder(root: Path, split_names: tuple[str, ...], channels: int) -> datasets.ImageFolder:
    for name in split_names:
        if (root / name).is_dir():
            loader = functools.partial(load_image, mode="L" if channels == 1 else "RGB")
            try:
                return datasets.ImageFolder(str(root / name), loader=loader)
            except (FileNotFoundError, RuntimeError) as err:
                raise UserError(f"{root / name}: {err}") from None
    raise UserError(f"no {' or '.join(split_names)} folder under {root}")


def _same_classes(train: datasets.ImageFolder, test: datasets.ImageFolder) -> None:
    """ImageFolder numbers the classes of each folder by its own sorted subfolders: a class
    missing from (or extra in) the evaluation folder would shift every label after it."""
    if test.classes == train.classes:
        return
    missing, extra = (
        sorted(set(train.classes) - set(test.classes)),
        sorted(set(test.classes) - set(train.classes)),
    )
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("lacks", missing), ("has classes not in training:", extra))
        if names
    ]
    raise UserError(f"{test.root}: {' and '.join(parts)} (its class folders must be those of {train.root})")


def _download(
    factory: Callable[..., Dataset], name: str, root: Path, cfg: DataConfig, **kwargs: Any
) -> Dataset:
    try:
        return factory(str(root), download=cfg.download, **kwargs)
    except (OSError, RuntimeError) as err:  # offline (URLError is an OSError) or not found
        raise UserError(
            f"{name} not found under {root} and could not be downloaded ({err}); "
            f"set data.data_dir to a folder holding it"
        ) from None


_STATS = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "mnist": ((0.1307,), (0.3081,)),
    "fashion_mnist": ((0.2860,), (0.3530,)),
    "imagefolder": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),  # ImageNet's
}
_TORCHVISION = {
    "cifar10": (datasets.CIFAR10, 3, 32),
    "cifar100": (datasets.CIFAR100, 3, 32),
    "mnist": (datasets.MNIST, 1, 28),
    "fashion_mnist": (datasets.FashionMNIST, 1, 28),
}


def _torchvision(cfg: DataConfig, channels: int) -> ImageData:
    factory, native_channels, size = _TORCHVISION[cfg.dataset]
    data_dir = resolve_data_dir(cfg.data_dir or None)
    folder = data_dir / cfg.dataset if data_dir is not None else None
    mean, std = _STATS[cfg.dataset]
    if folder is not None and (folder / "train").is_dir():
        train = _image_folder(folder, ("train",), native_channels)
        test = _image_folder(folder, ("test", "val"), native_channels)
        _same_classes(train, test)
        return ImageData(train, test, train.classes, native_channels, size, mean, std)
    root = data_dir or DOWNLOAD_ROOT
    train = _download(factory, cfg.dataset, root, cfg, train=True)
    test = _download(factory, cfg.dataset, root, cfg, train=False)
    return ImageData(train, test, list(train.classes), native_channels, size, mean, std)


def _imagefolder(cfg: DataConfig, channels: int) -> ImageData:
    if not cfg.path:
        raise UserError("key 'data.path': dataset=imagefolder needs the folder holding train/ and val/")
    root = Path(cfg.path).expanduser()
    train = _image_folder(root, ("train",), channels)
    test = _image_folder(root, ("val", "test"), channels)
    _same_classes(train, test)
    mean, std = _STATS["imagefolder"] if channels == 3 else ((0.5,), (0.5,))
    return ImageData(train, test, train.classes, channels, None, mean, std)


DATASETS: dict[str, Callable[[DataConfig, int], ImageData]] = {
    "digits": _digits,
    "cifar10": _torchvision,
    "cifar100": _torchvision,
    "mnist": _torchvision,
    "fashion_mnist": _torchvision,
    "imagefolder": _imagefolder,
}


def build_datasets(cfg: DataConfig, *, channels: int, num_classes: int) -> ImageData:
    """The data set `cfg.dataset` names, checked against the model's channels and classes."""
    if cfg.dataset not in DATASETS:
        raise UserError(f"key 'data.dataset': unknown {cfg.dataset!r}; choose from {sorted(DATASETS)}")
    data = DATASETS[cfg.dataset](cfg, channels)
    if data.channels != channels:
        raise UserError(
            f"key 'model.in_chans': {cfg.dataset} has {data.channels} channel(s), "
            f"the model expects {channels}"
        )
    if len(data.classes) != num_classes:
        raise UserError(
            f"key 'model.num_classes': {cfg.dataset} has {len(data.classes)} classes, "
            f"the model has {num_classes}"
        )
    if cfg.mean:  # each on its own: [] keeps the data set's
        data.mean = tuple(cfg.mean)
    if cfg.std:
        data.std = tuple(cfg.std)
    return data
