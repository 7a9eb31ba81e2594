"""Where the verbs write, through the real command line on a tiny GPT run: an output never
replaces what the verb reads (export's directory, average's file), even with --force; an export
has the modes of a plain mkdir and open; a picture format matplotlib cannot write and an empty
--text are refused in one line before any model runs."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from zoo.verbs.cli import main

TINY = [
    "--train.progress=false", "--train.tensorboard=false", "--train.threads=1",
    "--model.num_layers=1", "--model.dim=32", "--model.num_heads=2", "--model.max_len=32",
    "--data.synthetic_train=60", "--data.synthetic_valid=10", "--data.vocab_size=300",
    "--data.context=32", "--data.batch_size=4",
    "--train.max_steps=2", "--train.save_every=1", "--train.eval_every=0",
]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A GPT run of 2 steps: step_00000001.pt, step_00000002.pt and best.pt."""
    out = tmp_path_factory.mktemp("gpt") / "run"
    main(["train", "gpt", *TINY, f"--train.out_dir={out}"])
    return out


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the run for one test to try to damage, in tmp_path/runs/run."""
    return Path(shutil.copytree(trained, tmp_path / "runs" / "run"))


def refused(capsys, *argv: str) -> str:
    """Run `python -m zoo argv` in-process; it must exit 2 with one line on stderr: that line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2, err
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "source, output",
    [
        ("{run}", "{run}"),  # the run itself
        ("{run}", "{run}/.."),  # the folder holding it
        ("{run}", "{run}/checkpoints"),
        ("{run}/checkpoints/best.pt", "{run}"),  # RUN given as its checkpoint file
        ("{run}", "{run}/checkpoints/best.pt"),  # a file, made a directory by an export
    ],
)
def test_export_never_replaces_what_it_reads_even_with_force(run, capsys, source, output):
    before = fingerprint(run.parent)
    source, output = source.format(run=run), output.format(run=run)
    err = refused(capsys, "export", "gpt", source, "--format=hf", f"--output={output}", "--force")
    assert f"--output {output}" in err
    assert fingerprint(run.parent) == before


def test_export_does_not_turn_a_file_into_a_directory(run, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    err = refused(capsys, "export", "gpt", str(run), "--format=hf", f"--output={notes}", "--force")
    assert f"--output {notes}" in err and "file" in err
    assert notes.read_text() == "keep me\n"


def test_export_beside_the_checkpoints_is_still_written_and_replaced(run):
    """The task's own next-step hint exports into the run (`--output RUN/ct2`)."""
    before = fingerprint(run)
    for extra in ([], ["--force"]):
        main(["export", "gpt", str(run), "--format=hf", f"--output={run / 'hf'}", *extra])
    assert (run / "hf" / "model.safetensors").is_file()
    assert {k: v for k, v in fingerprint(run).items() if not k.startswith("hf/")} == before


def test_an_export_has_the_modes_of_a_plain_mkdir_and_open(run, tmp_path):
    out = tmp_path / "hf"
    old = os.umask(0o022)
    try:
        main(["export", "gpt", str(run), "--format=hf", f"--output={out}"])
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert stat.S_IMODE(out.stat().st_mode) == 0o755  # mkdtemp made it 0700
    assert modes["model.safetensors"] == 0o644  # safetensors wrote it 0600
    assert set(modes.values()) == {0o644}


@pytest.mark.parametrize("name", ["best.pt", "step_00000002.pt", "step_00000003.pt"])
def test_average_never_writes_a_training_checkpoint_even_with_force(run, capsys, name):
    before = fingerprint(run)
    output = run / "checkpoints" / name
    err = refused(capsys, "average", "gpt", str(run), "--last=1", f"--output={output}", "--force")
    assert f"--output {output}" in err
    assert fingerprint(run) == before


def test_average_replaces_an_earlier_average_but_another_file_only_with_force(run, tmp_path, capsys):
    main(["average", "gpt", str(run), "--last=1"])
    first = (run / "averaged.pt").stat().st_ino
    main(["average", "gpt", str(run), "--last=1"])  # refreshing RUN/averaged.pt needs no --force
    assert (run / "averaged.pt").stat().st_ino != first  # written anew (an atomic rename)

    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    err = refused(capsys, "average", "gpt", str(run), "--last=1", f"--output={notes}")
    assert f"--output {notes}" in err and "--force" in err
    assert notes.read_text() == "keep me\n"
    main(["average", "gpt", str(run), "--last=1", f"--output={notes}", "--force"])
    assert notes.read_bytes().startswith(b"PK")  # a torch checkpoint now


def test_a_picture_format_matplotlib_cannot_write_is_refused_before_loading(tmp_path, capsys):
    # RUN does not exist: the output is checked first, so its line is the one shown.
    for name in ("attention.xyz", "attention"):
        output = tmp_path / name
        err = refused(capsys, "attention", "gpt", str(tmp_path / "no-run"), "--text=hi", f"--output={output}")
        assert f"--output {output}" in err and "png" in err and "svg" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", [["--text="], ["--text", ""]])
def test_an_empty_text_is_refused_not_read_as_no_text(run, capsys, monkeypatch, text):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"from stdin\n")))
    err = refused(capsys, "predict", "gpt", str(run), *text, "--max_new_tokens=2")
    assert "'text'" in err and "empty" in err
    assert sys.stdin.read() == "from stdin\n"  # not read
