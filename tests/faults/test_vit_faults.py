"""Faults against the ViT CLIs (train, evaluate, classify), run as subprocesses on tiny ImageFolder trees:
class folders that differ between splits, unreadable images, impossible patch sizes, checkpoints
of another task, missing folders. Each is one line with exit 2, and training done is kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import CLASSES, VIT, assert_refused, fingerprint, run, write_images

from zoo.train.checkpoint import load_checkpoint


def train(images: Path, out: Path, *extra: str) -> object:
    return run("tasks.vit.train", *VIT, f"--data.path={images}", f"--train.out_dir={out}", *extra)


@pytest.mark.parametrize(
    "val_classes, named",
    [
        (("cat", "dog"), "lacks emu"),  # would shift no label but lose a class
        (("cat", "dog", "emu", "fox"), "not in training: fox"),
        (("ant", "cat", "dog"), "lacks emu and has classes not in training: ant"),  # shifts every label
    ],
)
def test_val_classes_that_differ_from_train_are_named(tmp_path, val_classes, named):
    images = write_images(tmp_path / "images", {"train": CLASSES, "val": val_classes})
    assert_refused(train(images, tmp_path / "run"), str(images / "val"), named)


def test_evaluate_names_test_classes_that_differ_from_train(vit_run, tmp_path):
    images = write_images(tmp_path / "images", {"train": CLASSES, "val": ("cat", "dog", "gnu")})
    result = run("tasks.vit.evaluate", str(vit_run), f"--path={images}", f"--output={tmp_path / 'out.txt'}")
    assert_refused(result, str(images / "val"), "lacks emu", "gnu")


def test_a_corrupt_validation_image_is_named_after_the_step_is_saved(tmp_path):
    images = write_images(tmp_path / "images")
    bad = images / "val" / "dog" / "2.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    out = tmp_path / "run"
    assert_refused(train(images, out), "evaluation at step 2", str(bad))
    assert load_checkpoint(out / "checkpoints" / "step_00000002.pt")["step"] == 2


def test_a_corrupt_training_image_is_named(tmp_path):
    images = write_images(tmp_path / "images")
    bad = images / "train" / "emu" / "0.png"
    bad.write_bytes(b"")
    assert_refused(train(images, tmp_path / "run", "--data.batch_size=12"), str(bad))


def test_a_patch_size_that_does_not_divide_the_image_is_a_config_error(tmp_path):
    result = train(tmp_path / "unused", tmp_path / "run", "--model.patch_size=3")
    assert_refused(result, "model.patch_size", "3 does not divide image_size 8")


@pytest.mark.parametrize(
    "layout, named",
    [
        ({"train": CLASSES}, "no val or test folder under"),
        (None, "no train folder under"),
    ],
)
def test_a_missing_split_folder_is_named(tmp_path, layout, named):
    images = tmp_path / "images"
    images.mkdir()
    if layout:
        write_images(images, layout)
    assert_refused(train(images, tmp_path / "run"), named, str(images))


def test_evaluate_names_a_missing_image_folder_and_leaves_the_run(vit_run, tmp_path):
    before = fingerprint(vit_run / "checkpoints")
    result = run(
        "tasks.vit.evaluate", str(vit_run), f"--path={tmp_path / 'moved'}", f"--output={tmp_path / 'out.txt'}"
    )
    assert_refused(result, str(tmp_path / "moved"))
    assert fingerprint(vit_run / "checkpoints") == before


def test_evaluate_names_an_output_folder_it_cannot_make(vit_run, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run("tasks.vit.evaluate", str(vit_run), f"--output={blocker / 'predictions.txt'}")
    assert_refused(result, str(blocker))


def test_evaluate_options_are_checked_when_read(vit_run):
    assert_refused(run("tasks.vit.evaluate", str(vit_run), "--images=0"), "key 'images'")


def test_evaluate_names_the_splits_when_asked_for_validation(vit_run):
    assert_refused(
        run("tasks.vit.evaluate", str(vit_run), "--split=dev"), "no validation split", "train and test"
    )


def test_classify_names_a_missing_image_and_an_unreadable_one(vit_run, tmp_path):
    assert_refused(run("tasks.vit.classify", str(vit_run), input=f"{tmp_path / 'gone.png'}\n"), "gone.png")
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    assert_refused(run("tasks.vit.classify", str(vit_run), input=f"{bad}\n"), str(bad), "cannot read image")
