"""The ViT spec behind the shared verbs: the timm export loads into timm with equal logits,
classify reads image files and folders, attention draws held-out images without input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tasks.vit.config import ModelConfig, ViTConfig
from tasks.vit.spec import TEST_IMAGES, Classifier, ViTOptions, ViTSpec, image_paths, timm_architecture
from tasks.vit.task import build_model
from zoo.config import Invalid, UserError
from zoo.train import Trained
from zoo.verbs import Unsupported
from zoo.verbs.cli import run_verb


def _classifier(tmp_path: Path, model: ModelConfig, *, classes: list[str] | None = None) -> Classifier:
    """A randomly initialised ViT of `model` with pixel statistics other than 0 and 1."""
    torch.manual_seed(0)
    cfg = ViTConfig(model=model)
    mean = tuple(0.2 + 0.1 * c for c in range(model.in_chans))
    std = tuple(0.3 + 0.05 * c for c in range(model.in_chans))
    vit = build_model(model, mean=mean, std=std).eval()
    with torch.no_grad():  # biases and the class token start at zero: make every weight count
        for p in vit.parameters():
            p.add_(0.02 * torch.randn_like(p))
    trained = Trained(cfg, {}, {}, tmp_path / "model.pt", tmp_path, 0, False)
    names = classes or [f"c{i}" for i in range(model.num_classes)]
    return Classifier(vit, trained, "fp32", names, model.image_size, 16)


EXPORTABLE = {
    "digits": ModelConfig(),
    "token": ModelConfig(pool="token", image_size=16, patch_size=4, in_chans=3, num_classes=5, dim=32),
    "avg, no class token": ModelConfig(class_token=False, dim=32, num_heads=2, ffn_dim=96),
    "no biases": ModelConfig(bias=False, encoder_layers=2),
}


@pytest.mark.parametrize("name", sorted(EXPORTABLE))
def test_the_timm_export_gives_timms_model_equal_logits(name: str, tmp_path: Path) -> None:
    import timm
    from safetensors.torch import load_file

    mc = EXPORTABLE[name]
    loaded = _classifier(tmp_path, mc)
    out = tmp_path / "timm"
    out.mkdir()
    ViTSpec().export(loaded, "timm", out, ViTOptions(output=str(out)))
    config = json.loads((out / "config.json").read_text())
    assert config["num_classes"] == mc.num_classes and config["label_names"] == loaded.classes
    theirs = timm.create_model(
        config["architecture"], pretrained=False, num_classes=config["num_classes"], **config["model_args"]
    )
    theirs.load_state_dict(load_file(str(out / "model.safetensors")))
    images = torch.rand(4, mc.in_chans, mc.image_size, mc.image_size)
    # timm normalises outside the model, with the statistics of its pretrained_cfg
    pretrained_cfg = config["pretrained_cfg"]
    mean = torch.tensor(pretrained_cfg["mean"]).view(-1, 1, 1)
    std = torch.tensor(pretrained_cfg["std"]).view(-1, 1, 1)
    with torch.no_grad():
        ours = loaded.model(images)
        torch.testing.assert_close(theirs.eval()((images - mean) / std), ours, atol=1e-5, rtol=0)
        # the directory alone, as timm reads a local model folder
        folder = timm.create_model(f"local-dir:{out}", pretrained=True).eval()
        torch.testing.assert_close(folder((images - mean) / std), ours, atol=1e-5, rtol=0)


def test_a_timm_shaped_config_is_named_by_its_timm_architecture() -> None:
    tiny = ModelConfig(image_size=224, patch_size=16, in_chans=3, num_classes=1000, dim=192,
                       encoder_layers=12, num_heads=3, ffn_dim=768, pool="token")  # fmt: skip
    assert timm_architecture(tiny)[0] == "vit_tiny_patch16_224"


def test_a_config_timm_cannot_build_is_refused_in_one_line() -> None:
    with pytest.raises(Unsupported, match="model.ffn_dim 30"):
        timm_architecture(ModelConfig(dim=22, num_heads=2, ffn_dim=30))


def _png(path: Path, side: int, value: int = 128) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((side, side), value, dtype=np.uint8), "L").save(path)
    return path


def test_classify_reads_files_and_folders_into_path_class_prob_lines(tmp_path: Path) -> None:
    loaded = _classifier(tmp_path, ModelConfig())
    one = _png(tmp_path / "one.png", 8, value=200)
    folder = tmp_path / "folder"
    for name in ("b.png", "a.png", "sub/c.PNG"):
        _png(folder / name, 32, value=200)  # another size: resized to the model's 8 x 8
    (folder / "notes.txt").write_text("not an image")
    outputs = ViTSpec().predict(loaded, [str(one), str(folder)], ViTOptions())
    assert len(outputs) == 2  # one output per input line; a folder's is one line per image
    rows = [line.split("\t") for output in outputs for line in output.splitlines()]
    assert [row[0] for row in rows] == [str(one), *(str(folder / n) for n in ("a.png", "b.png", "sub/c.PNG"))]
    assert all(row[1] in loaded.classes and 0.0 < float(row[2]) <= 1.0 for row in rows)
    # a uniform image at 32 x 32 is resized to the same 8 x 8 input as the 8 x 8 one
    assert rows[0][1:] == rows[1][1:]


def test_classify_top_k_lists_the_most_probable_classes_in_order(tmp_path: Path) -> None:
    loaded = _classifier(tmp_path, ModelConfig())
    image = _png(tmp_path / "one.png", 8, value=90)
    (top1,) = ViTSpec().predict(loaded, [str(image)], ViTOptions())
    (top3,) = ViTSpec().predict(loaded, [str(image)], ViTOptions(top_k=3))
    path, *pairs = top3.split("\t")
    classes, probs = pairs[0::2], [float(p) for p in pairs[1::2]]
    assert path == str(image) and len(set(classes)) == 3 and probs == sorted(probs, reverse=True)
    assert top3.startswith(top1)  # the first pair is top-1's
    chances = loaded.logits(loaded.read([str(image)])).softmax(dim=-1)[0].detach()
    assert probs == pytest.approx([float(chances[loaded.classes.index(c)]) for c in classes], abs=1e-4)
    with pytest.raises(Invalid, match="top_k"):
        ViTSpec().predict(loaded, [str(image)], ViTOptions(top_k=len(loaded.classes) + 1))


def test_classify_names_a_missing_path_an_empty_folder_and_an_unreadable_image(tmp_path: Path) -> None:
    loaded, spec = _classifier(tmp_path, ModelConfig()), ViTSpec()
    with pytest.raises(UserError, match="no such image file or folder"):
        spec.predict(loaded, [str(tmp_path / "nope.png")], ViTOptions())
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no images in this folder"):
        image_paths([str(tmp_path / "empty")])
    with pytest.raises(UserError, match="line 2 is empty"):
        image_paths([str(_png(tmp_path / "x.png", 8)), " "])
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    with pytest.raises(UserError, match="cannot read image"):
        spec.predict(loaded, [str(bad)], ViTOptions())


def test_attention_draws_test_images_without_input_and_given_images_with_it(tmp_path: Path) -> None:
    loaded, spec = _classifier(tmp_path, ModelConfig(), classes=[str(d) for d in range(10)]), ViTSpec()
    assert spec.default_input(None) == [TEST_IMAGES]
    held_out = tmp_path / "test.png"
    assert "3 image" in spec.attention(loaded, [TEST_IMAGES], held_out, ViTOptions(images=3))
    assert held_out.stat().st_size > 1000
    given = tmp_path / "given.png"
    folder = tmp_path / "images"
    for i in range(4):
        _png(folder / f"{i}.png", 8, value=60 * i)
    assert "2 image" in spec.attention(loaded, [str(folder)], given, ViTOptions(images=2))
    assert given.stat().st_size > 1000


def test_the_verbs_refuse_the_validation_split_naming_the_splits(tmp_path: Path) -> None:
    with pytest.raises(Unsupported, match="no validation split; its splits are train and test"):
        ViTSpec().evaluate(_classifier(tmp_path, ModelConfig()), ViTOptions(split="valid"))


def test_classify_is_the_predict_verb_and_lists_the_vit_options(capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO())
    with pytest.raises(SystemExit):
        run_verb(ViTSpec(), "classify", ["--help"])
    text = capsys.readouterr().out
    assert all(f"--{name}" in text for name in ("run", "input", "output", "batch_size", "path", "images"))
