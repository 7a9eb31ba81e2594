"""Faults against the GPT commands, run as subprocesses on tiny runs: SIGTERM then resume equals an
uninterrupted run; an empty or binary training file, bytes on stdin that are not UTF-8, a
checkpoint of another task, a tokenizer that does not fit the model and bad generation options
(before any prompt is written) are each one line, exit 2,
and leave the run as it was."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from clirun import ENV, GPT, assert_refused, fingerprint, run

from zoo.train.checkpoint import load_checkpoint, step_checkpoints

# Dropout on, so an exact resume must also restore the RNG streams.
EXACT = [*GPT, "--model.dropout=0.2", "--train.eval_every=0", "--train.save_every=0"]


def _train(out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tasks.gpt.train", *EXACT, f"--train.out_dir={out}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV)


def _weights(run_dir: Path) -> dict:
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])["model"]


def test_sigterm_saves_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path):
    whole = _train(tmp_path / "whole", "--train.max_steps=40")
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "tasks.gpt.train", *EXACT, f"--train.out_dir={out}", "--train.max_steps=40"]
    proc = subprocess.Popen(
        [*cmd, "--train.log_every=1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or metrics.read_text().count("\n") < 2):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the machine was too fast to stop the run before its end")
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in stderr, stderr
    resumed = subprocess.run(
        [*cmd, "--train.log_every=1"], capture_output=True, text=True, timeout=300, env=ENV
    )
    assert resumed.returncode == 0 and "resumed from" in resumed.stdout + resumed.stderr, resumed.stderr
    a, b = _weights(out), _weights(tmp_path / "whole")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


@pytest.mark.parametrize(
    "content, named",
    [(b"", ("train.txt", "empty")), (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", ("train.txt", "UTF-8"))],
)
def test_an_empty_or_binary_training_file_is_one_line(tmp_path, content, named):
    (tmp_path / "train.txt").write_bytes(content)
    (tmp_path / "valid.txt").write_text("The town lies on the river.\n")
    result = run(
        "tasks.gpt.train", *GPT, "--data.source=text", f"--data.data_dir={tmp_path}", "--data.path=train.txt",
        "--data.valid=[valid.txt]", f"--train.out_dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert_refused(result, *named)
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_stdin_that_is_not_utf8_names_the_line(gpt_run):
    before = fingerprint(gpt_run)
    assert_refused(
        run("tasks.gpt.generate", str(gpt_run), input=b"The town\nthe \xff river\n"), "stdin:2", "UTF-8"
    )
    assert fingerprint(gpt_run) == before


def test_checkpoints_of_another_task_are_refused_both_ways(gpt_run, bert_run):
    assert_refused(run("tasks.gpt.generate", str(bert_run), input="The town\n"), "BertPretrainingConfig")
    assert_refused(run("zoo", "evaluate", "bert", str(gpt_run)), "GPTConfig")


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(gpt_run, tmp_path):
    out = tmp_path / "hf"
    exported = run("zoo", "export", "gpt", str(gpt_run), "--format=hf", f"--output={out}")
    assert exported.returncode == 0, exported.stderr
    vocab = json.loads((out / "vocab.json").read_text())
    vocab.update({f"extra{i}": len(vocab) + i for i in range(10)})
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "tokenizer.json").unlink()
    assert_refused(run("tasks.gpt.generate", str(out), input="The town\n"), "tokenizer", "vocabulary")


@pytest.mark.parametrize(
    "options, named",
    [
        (["--top_p=1.5"], ("top_p",)),
        (["--min_new_tokens=9", "--max_new_tokens=4"], ("min_new_tokens", "max_new_tokens")),
        (["--stop=['']"], ("stop",)),
        (["--do_sample", "--num_beams=2"], ("num_beams",)),
        (["--steps_per_call=4"], ("steps_per_call", "cache_implementation static")),
    ],
)
def test_bad_generation_options_are_one_line_before_the_prompt_is_written(gpt_run, options, named):
    # One prompt streams: the prompt would be on stdout already if the options were checked late.
    result = run("tasks.gpt.generate", str(gpt_run), *options, input="The town\n")
    assert_refused(result, *named)
    assert result.stdout == ""
