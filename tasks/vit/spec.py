"""The ViT task as the shared verbs see it (zoo.verbs): train, evaluate (top-1/top-5 and a
confusion matrix), predict (alias classify: image files or folders -> class and probability),
attention (attention rollout), export (timm, or ONNX), average."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Subset
from torchvision.datasets.folder import IMG_EXTENSIONS
from torchvision.transforms import v2

from tasks.vit.config import ModelConfig, ViTConfig
from tasks.vit.data import build_datasets, load_image
from tasks.vit.figures import attention_rollout, confusion_matrix, plot_confusion_matrix, plot_rollout
from tasks.vit.task import (
    CLASSES_ARTIFACT,
    ViTTask,
    build_model,
    classification_metrics,
    num_parameters,
    predict,
)
from tasks.vit.transforms import SeededTransform, eval_transform
from zoo.config import Invalid, UserError
from zoo.convert.onnx.export import export_vit
from zoo.convert.timm_vit import zoo_to_timm
from zoo.models.vit import ViT
from zoo.train import FitResult, Trained
from zoo.verbs import Evaluation, Loaded, TaskSpec, Unsupported, VerbOptions

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "vit" / "digits.yaml"
# The side of every image of a data set with one fixed size (imagefolder: sizes vary).
NATIVE_SIZE = {"digits": 8, "cifar10": 32, "cifar100": 32, "mnist": 28, "fashion_mnist": 28}
# What attention draws without input: a few held-out images spread over the test split.
TEST_IMAGES = "<test images>"
# timm's names for the plain ViT sizes: (embed_dim, depth, num_heads); mlp_ratio 4.
FALLBACK_ARCHITECTURE = "vit_base_patch16_224"
TIMM_SIZES = {"tiny": (192, 12, 3), "small": (384, 12, 6), "base": (768, 12, 12), "large": (1024, 24, 16)}

NEXT_STEPS = """
Evaluate, classify, draw, export the run directory:
  python -m zoo evaluate vit {run} --split test      (confusion matrix in {run}/figures/)
  python -m zoo classify vit {run} --input FILE      (FILE: image paths or folders, one per line)
  python -m zoo attention vit {run} --output {run}/attention.png
  python -m zoo export vit {run} --format timm --output {run}/timm
CIFAR-10 recipe: python -m zoo train vit --config configs/vit/cifar10.yaml --data.data_dir=PATH
  (PATH holds cifar10/{{train,test}}; without it torchvision downloads CIFAR-10)"""


@dataclass
class ViTOptions(VerbOptions):
    """The shared options, plus the ImageFolder root and how many images attention draws."""

    path: str = field(
        default="", metadata={"help": "imagefolder: the root holding train/ and val/ ('' = as trained)"}
    )
    images: int = field(
        default=8, metadata={"help": "attention: at most this many images in the rollout figure"}
    )
    top_k: int = field(
        default=1, metadata={"help": "classify: the k most probable classes a line, each CLASS<TAB>PROB"}
    )

    def check(self) -> None:
        super().check()
        for key in ("images", "top_k"):
            if getattr(self, key) < 1:
                raise Invalid(key, f"must be at least 1, not {getattr(self, key)}")


@dataclass
class Classifier(Loaded):
    """The ViT with what it needs beside it, all from the checkpoint and its recipe."""

    model: ViT
    classes: list[str]
    native_size: int | None  # the data set's fixed image side, None when sizes vary
    batch_size: int

    @property
    def image_size(self) -> int:  # the model's input side
        return self.model.grid * self.model.patch_size

    @property
    def channels(self) -> int:
        return self.model.patch_embed.in_channels

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def transform(self) -> v2.Compose:
        """An image file -> the model's input, as the evaluation transform prepares a test image:
        a data set of fixed-size images is resized to the model's side (a no-op at that side), one
        of varied sizes is resized on the short side and centre-cropped."""
        return eval_transform(self.image_size, None if self.native_size is None else 0)

    def read(self, paths: list[str]) -> Tensor:
        """The images of `paths` as one batch (N, C, S, S) in [0, 1]."""
        mode, transform = "L" if self.channels == 1 else "RGB", self.transform()
        return torch.stack([transform(load_image(path, mode)) for path in paths])

    def logits(self, images: Tensor) -> Tensor:
        out = [self.model(batch.to(self.device)).float().cpu() for batch in images.split(self.batch_size)]
        return torch.cat(out)


def classes_of(trained: Trained) -> tuple[list[str], int | None]:
    """The class names and the data set's native image side (None: sizes vary) saved inside the
    checkpoint; older runs: digits' names, else indices, and the side the data set is known by."""
    cfg = trained.cfg
    if CLASSES_ARTIFACT in trained.artifacts:
        record = json.loads(trained.artifacts[CLASSES_ARTIFACT])
        return record["classes"], record["image_size"]
    if cfg.data.dataset != "digits":
        print(f"note: {trained.path} keeps no class names: classes are printed as indices", file=sys.stderr)
    return [str(i) for i in range(cfg.model.num_classes)], NATIVE_SIZE.get(cfg.data.dataset)


def image_paths(lines: list[str]) -> list[list[str]]:
    """For each input line, the images it names: the file itself, or every image inside a folder
    (searched recursively, sorted)."""
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise UserError(f"input line {number} is empty: give one image file or folder per line")
        path = Path(line.strip()).expanduser()
        if path.is_dir():
            images = sorted(str(p) for p in path.rglob("*") if p.suffix.lower() in IMG_EXTENSIONS)
            if not images:
                raise UserError(f"{path}: no images in this folder ({', '.join(IMG_EXTENSIONS)})")
            found.append(images)
        elif path.is_file():
            found.append([str(path)])
        else:
            raise UserError(f"{line.strip() or repr(line)}: no such image file or folder")
    return found


def timm_architecture(mc: ModelConfig) -> tuple[str, dict]:
    """(timm architecture name, create_model keyword arguments) of a ViT config; a config timm's
    VisionTransformer cannot build is refused by name."""
    mlp_ratio = mc.ffn_dim / mc.dim
    if int(mc.dim * mlp_ratio) != mc.ffn_dim:
        raise Unsupported(f"vit: model.ffn_dim {mc.ffn_dim} is no mlp_ratio * dim that timm builds")
    args = {
        "img_size": mc.image_size,
        "patch_size": mc.patch_size,
        "in_chans": mc.in_chans,
        "embed_dim": mc.dim,
        "depth": mc.encoder_layers,
        "num_heads": mc.num_heads,
        "mlp_ratio": mlp_ratio,
        "qkv_bias": mc.bias,
        "proj_bias": mc.bias,
        "class_token": mc.class_token,
        "global_pool": mc.pool,
    }
    import timm

    for size, (dim, depth, heads) in TIMM_SIZES.items():
        name = f"vit_{size}_patch{mc.patch_size}_{mc.image_size}"
        plain = mc.in_chans == 3 and mc.bias and mc.class_token and mc.pool == "token"
        if plain and (mc.dim, mc.encoder_layers, mc.num_heads, mc.ffn_dim) == (dim, depth, heads, 4 * dim):
            if timm.is_model(name):
                return name, args
    return FALLBACK_ARCHITECTURE, args  # timm's convention: a registered name plus model_args


class ViTSpec(TaskSpec):
    name = "vit"
    description = "a Vision Transformer image classifier (top-1/top-5, attention rollout)"
    config = ViTConfig
    default_recipe = str(DEFAULT_RECIPE) if DEFAULT_RECIPE.is_file() else None
    options = ViTOptions
    predict_alias = "classify"
    export_formats = ("timm", "onnx")

    def runner_task(self, cfg: ViTConfig) -> ViTTask:
        return ViTTask(cfg)

    def after_training(self, cfg: ViTConfig, task: ViTTask, result: FitResult) -> None:
        # The runner's last evaluation is on the test split (ViT data has no validation split).
        m = result.metrics
        print(
            f"test top-1 {m['top1']:.2f}%  top-5 {m['top5']:.2f}%  ({cfg.data.dataset}, "
            f"{num_parameters(result.model):,} parameters, {result.step} steps; "
            f"run directory {result.run_dir}, summary in {result.run_dir / 'summary.json'})"
        )
        print(NEXT_STEPS.format(run=result.run_dir))

    def recipe_overrides(self, options: ViTOptions) -> list[str]:
        overrides = super().recipe_overrides(options)
        return overrides + ([f"data.path={options.path}"] if options.path else [])

    def load(self, trained: list[Trained], options: ViTOptions) -> Classifier:
        (run,) = trained
        cfg = run.cfg
        # The pixel statistics are buffers: the checkpoint's values replace these placeholders.
        model = run.load_into(build_model(cfg.model, mean=(0.0,), std=(1.0,)))
        return Classifier(
            model.to(torch.device(options.device)),
            run,
            options.precision or cfg.train.precision,
            *classes_of(run),
            options.batch_size or cfg.data.eval_batch_size,
        )

    def evaluate(self, loaded: Classifier, options: ViTOptions) -> Evaluation:
        cfg, trained = loaded.trained.cfg, loaded.trained
        if options.split == "valid":
            imagefolder = cfg.data.dataset == "imagefolder"
            held_out = " (test is data.path's val/ or test/ folder)" if imagefolder else ""
            raise Unsupported(
                f"vit: {cfg.data.dataset} has no validation split; its splits are train and test{held_out}"
            )
        data = build_datasets(cfg.data, channels=cfg.model.in_chans, num_classes=cfg.model.num_classes)
        images = data.train if options.split == "train" else data.test
        if 0 < options.limit < len(images):  # evenly spaced: class-sorted folders stay balanced
            images = Subset(images, torch.linspace(0, len(images) - 1, options.limit).long().tolist())
        transform = eval_transform(cfg.model.image_size, data.image_size)
        loader = DataLoader(SeededTransform(images, transform, cfg.train.seed), batch_size=loaded.batch_size,
                            num_workers=cfg.data.num_workers)  # fmt: skip
        logits, labels = predict(loaded.model, loader)
        metrics = {"images": len(labels), **classification_metrics(logits, labels)}
        predicted = logits.argmax(dim=-1)
        figures = trained.run_dir / "figures"
        figures.mkdir(parents=True, exist_ok=True)
        png = figures / (
            "confusion_matrix.png" if options.split == "test" else f"confusion_matrix_{options.split}.png"
        )
        plot_confusion_matrix(
            confusion_matrix(labels, predicted, len(data.classes)), data.classes, png,
            title=f"{cfg.data.dataset} {options.split}: top-1 {metrics['top1']:.2f}%",
        )  # fmt: skip
        weights = "EMA weights" if trained.ema else "weights"
        summary = (
            f"{options.split} top-1 {metrics['top1']:.2f}%  top-5 {metrics['top5']:.2f}%  loss "
            f"{metrics['loss']:.4f}  ({len(labels)} images, {weights} of {trained.path})\n"
            f"  confusion matrix: {png}"
        )
        return Evaluation(metrics, summary, [data.classes[i] for i in predicted.tolist()])

    def predict(self, loaded: Classifier, lines: list[str], options: ViTOptions) -> list[str]:
        """One output per input line: `PATH<TAB>CLASS<TAB>PROB`, one line per image (a folder's
        images, one line each, in one output); with --top_k k, k CLASS<TAB>PROB pairs, most
        probable first (timm's inference --topk)."""
        if options.top_k > len(loaded.classes):
            raise Invalid("top_k", f"{options.top_k} is more than the model's {len(loaded.classes)} classes")
        groups = image_paths(lines)
        paths = [path for group in groups for path in group]
        probs, classes = loaded.logits(loaded.read(paths)).softmax(dim=-1).topk(options.top_k, dim=-1)
        rows = iter(
            "\t".join([path, *(f"{loaded.classes[c]}\t{p:.4f}" for c, p in zip(top, chances))])
            for path, top, chances in zip(paths, classes.tolist(), probs.tolist())
        )
        return ["\n".join(next(rows) for _ in group) for group in groups]

    def attention(self, loaded: Classifier, lines: list[str], output: Path, options: ViTOptions) -> str:
        model, classes = loaded.model, loaded.classes
        if lines == [TEST_IMAGES]:
            images, titles = self._test_images(loaded, options.images)
        else:
            paths = [path for group in image_paths(lines) for path in group]
            if len(paths) > options.images:
                print(
                    f"note: drawing the first {options.images} of {len(paths)} images (--images)",
                    file=sys.stderr,
                )
                paths = paths[: options.images]
            images = loaded.read(paths)
            titles = [Path(p).name for p in paths]
        logits = loaded.logits(images)
        probs = logits.softmax(dim=-1)
        titles = [
            f"{t} -> {classes[i]} ({probs[n, i]:.2f})"
            for n, (t, i) in enumerate(zip(titles, logits.argmax(dim=-1).tolist()))
        ]
        maps = attention_rollout(model, images.to(loaded.device)).float().cpu()
        looker = "the class token looks" if model.pool == "token" else "the pooled tokens look"
        given = "true class" if lines == [TEST_IMAGES] else "file"
        title = f"attention rollout: where {looker} ({given} -> predicted class, probability)"
        plot_rollout(images, maps, titles, output, title=title)
        return f"the attention rollout of {len(images)} image(s)"

    def _test_images(self, loaded: Classifier, count: int) -> tuple[Tensor, list[str]]:
        """`count` test images spread over the split (class-sorted folders: over the classes)."""
        cfg = loaded.trained.cfg
        data = build_datasets(cfg.data, channels=cfg.model.in_chans, num_classes=cfg.model.num_classes)
        test = SeededTransform(
            data.test, eval_transform(cfg.model.image_size, data.image_size), cfg.train.seed
        )
        picks = torch.linspace(0, len(test) - 1, min(count, len(test))).long().tolist()
        examples = [test[i] for i in picks]
        return torch.stack([image for image, _ in examples]), [loaded.classes[label] for _, label in examples]

    def default_input(self, loaded: Loaded) -> list[str]:
        return [TEST_IMAGES]

    def export(self, loaded: Classifier, fmt: str, output: Path, options: ViTOptions) -> None:
        if fmt == "onnx":
            export_vit(loaded.model, output)
            (output / "classes.txt").write_text("".join(f"{name}\n" for name in loaded.classes))
            print(
                f"run model.onnx with onnxruntime ([0, 1] images of side {loaded.image_size})",
                file=sys.stderr,
            )
            return
        from safetensors.torch import save_file

        cfg = loaded.trained.cfg
        arch, args = timm_architecture(cfg.model)
        model = loaded.model
        state = {k: v.detach().float().cpu().contiguous() for k, v in zoo_to_timm(model.state_dict()).items()}
        save_file(state, str(output / "model.safetensors"))
        mean, std = model.pixel_mean.flatten().tolist(), model.pixel_std.flatten().tolist()
        size = cfg.model.image_size
        varied = loaded.native_size is None
        config = {
            "architecture": arch,
            "num_classes": cfg.model.num_classes,
            "num_features": cfg.model.dim,
            "global_pool": cfg.model.pool,
            "model_args": args,
            "label_names": loaded.classes,
            "pretrained_cfg": {
                "input_size": [cfg.model.in_chans, size, size],
                "fixed_input_size": True,
                "interpolation": "bicubic" if varied else "bilinear",
                "crop_pct": 0.875 if varied else 1.0,
                "crop_mode": "center",
                "mean": mean,
                "std": std,
                "num_classes": cfg.model.num_classes,
                "pool_size": None,
                "first_conv": "patch_embed.proj",
                "classifier": "head",
            },
        }
        (output / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        print(
            f"load it with timm.create_model('local-dir:{options.output}', pretrained=True) "
            f"({arch}, num_classes {cfg.model.num_classes}, the rest in config.json's model_args; "
            "timm normalises with its pretrained_cfg mean and std)",
            file=sys.stderr,
        )
