"""Faults against the translation CLIs (train, evaluate, translate), run as subprocesses on a
tiny run: over-long sentences, bad bytes, corrupt tokenizers, checkpoints of another task,
missing data and unwritable outputs. Refusals are one line with exit 2 and leave the run as it
was; evaluation sets are cut to the position table, never lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from clirun import LONG_EN, TRANSLATION, assert_refused, fingerprint, run, write_corpus

from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.train.checkpoint import load_checkpoint

# translate, with every decoding step's EOS score pushed to -inf: the output can only end at the
# length limit. Prints the number of decoder steps on stderr.
NEVER_EOS = f"""
import runpy, sys
from tasks.translation import spec
build, steps = spec.build_translation_model, []
def never_eos(module, args, logits):
    steps.append(1)
    logits[..., {SPECIAL_IDS.eos}] = float("-inf")
    return logits
def patched(cfg, tokenizer):
    model = build(cfg, tokenizer)
    model.output.register_forward_hook(never_eos)
    return model
spec.build_translation_model = patched
sys.argv = ["translate"] + sys.argv[1:]
try:
    runpy.run_module("tasks.translation.translate", run_name="__main__")
finally:
    print(f"decoder steps: {{len(steps)}}", file=sys.stderr)
"""


def translate(run_dir: Path, *args: str, input: bytes | str = b"") -> object:
    return run("tasks.translation.translate", str(run_dir), *args, input=input)


def evaluate(run_dir: Path, *args: str) -> object:
    return run("tasks.translation.evaluate", str(run_dir), "--beam_size=1", *args)


def resume(trained: Path, copy: Path) -> object:
    """The training command of the `trained` run (same data and model), on its `copy`."""
    return run(
        "tasks.translation.train",
        *TRANSLATION,
        "--train.max_steps=3",
        f"--data.data_dir={trained.parent / 'data'}",
        f"--train.out_dir={copy}",
    )


def checkpoints(run_dir: Path) -> dict[str, str]:
    return fingerprint(run_dir / "checkpoints")


# --- lengths ------------------------------------------------------------------------------------


def test_a_finished_run_keeps_its_test_score_with_sentences_longer_than_the_positions(translation_run):
    run_dir, trained = translation_run
    log = trained.stdout + trained.stderr
    assert "valid: 1 of 11 pairs have a side longer than the model's 256 positions" in log
    assert "test: 1 of 11 pairs have a side longer than the model's 256 positions" in log
    test = json.loads((run_dir / "test.json").read_text())
    assert test["step"] == 2 and 0.0 <= test["bleu"] <= 100.0


def test_evaluate_cuts_long_sentences_to_fit_with_a_count(translation_run):
    result = evaluate(translation_run[0], "--split=test", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "test: 1 of 11 pairs have a side longer than the model's 256 positions" in result.stderr
    assert json.loads(result.stdout)["sentences"] == 11


def test_translate_refuses_a_line_longer_than_the_positions_naming_it(translation_run):
    result = translate(translation_run[0], input=f"a man\n{LONG_EN}\nthe dog\n")
    assert_refused(result, "stdin:2", "model.max_len 256", "--truncate")


def test_translate_truncate_translates_the_beginning_with_a_notice(translation_run):
    result = translate(translation_run[0], "--truncate", input=f"a man\n{LONG_EN}\nthe dog\n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 line(s) cut to their first 255 subword tokens" in result.stderr and "lines 2" in result.stderr
    assert len(result.stdout.splitlines()) == 3


@pytest.mark.parametrize("beam_size", [1, 3])
def test_decoding_stops_at_the_position_table(translation_run, beam_size):
    """A 241-id line (242 positions with EOS) may grow to 1 * 242 + 50 = 292 output tokens by
    the recipe's limit: decoding must stop at the 256-position table instead."""
    run_dir = translation_run[0]
    tokenizer = SentencePieceTokenizer.load(run_dir / "spm.model")
    word = next(
        p[1:]
        for p in (tokenizer.sp.id_to_piece(i) for i in range(tokenizer.vocab_size))
        if p.startswith("\u2581") and p[1:].isalpha() and len(tokenizer.encode(p[1:])) == 1
    )
    line = " ".join([word] * 241)
    assert len(tokenizer.encode(line)) == 241
    result = run("", str(run_dir), f"--beam_size={beam_size}", input=line + "\n", script=NEVER_EOS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.splitlines()) == 1
    steps = int(result.stderr.split("decoder steps: ")[1].split()[0])
    assert 255 <= steps <= 256  # 255 tokens, then EOS is forced: positions 0..255 of the table


def test_a_training_filter_beyond_the_positions_is_a_config_error(tmp_path):
    result = run("tasks.translation.train", "--data.max_len=300", f"--train.out_dir={tmp_path}")
    assert_refused(result, "data.max_len", "256")


def test_a_position_scale_on_a_learned_table_is_a_config_error(tmp_path):
    args = ("--model.positions=learned", "--model.position_scale=0.1", f"--train.out_dir={tmp_path}")
    assert_refused(run("tasks.translation.train", *args), "model.position_scale", "'learned'")


# --- bytes and tokenizers -----------------------------------------------------------------------


def test_non_utf8_on_stdin_names_the_line(translation_run):
    result = translate(translation_run[0], input=b"a man\nthe \xff\xfe dog\n")
    assert_refused(result, "stdin:2", "UTF-8")


def test_non_utf8_in_the_input_file_names_file_and_line(translation_run, tmp_path):
    source = tmp_path / "sentences.txt"
    source.write_bytes(b"a man\nthe dog\n\xc3\x28 cat\n")
    assert_refused(translate(translation_run[0], f"--input={source}"), f"{source}:3", "UTF-8")


def test_non_utf8_in_a_test_file_names_file_and_line(translation_run, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    lines = (corpus / "test.de").read_bytes().split(b"\n")
    lines[3] = b"\xff" + lines[3]
    (corpus / "test.de").write_bytes(b"\n".join(lines))
    assert_refused(evaluate(translation_run[0], f"--data_dir={tmp_path}"), f"{corpus / 'test.de'}:4")


@pytest.mark.parametrize("cli", ["translate", "evaluate"])
@pytest.mark.parametrize("garbage", [b"not a sentencepiece model", b"\x0a\x05junk"])
def test_corrupt_tokenizer_inside_a_checkpoint_is_named(translation_run, tmp_path, cli, garbage):
    run_dir = translation_run[0]
    state = load_checkpoint(run_dir / "checkpoints" / "best.pt")
    state["artifacts"]["spm.model"] = garbage
    broken = tmp_path / "broken.pt"
    torch.save(state, broken)
    result = translate(broken, input="a man\n") if cli == "translate" else evaluate(broken)
    assert_refused(result, f"spm.model inside {broken}")


def test_corrupt_spm_model_given_to_training_is_named(tmp_path):
    bad = tmp_path / "spm.model"
    bad.write_bytes(b"\x0a\x05junk")
    result = run(
        "tasks.translation.train",
        *TRANSLATION,
        f"--data.tokenizer={bad}",
        f"--data.data_dir={write_corpus(tmp_path / 'corpus').parent}",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, str(bad))


def test_resuming_with_a_corrupt_spm_model_is_named_and_loses_nothing(translation_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(translation_run[0], run_dir)
    (run_dir / "spm.model").write_bytes(b"")  # as a full disk leaves it
    before = checkpoints(run_dir)
    result = resume(translation_run[0], run_dir)
    assert_refused(result, str(run_dir / "spm.model"))
    assert checkpoints(run_dir) == before


# --- checkpoints of another task ----------------------------------------------------------------


@pytest.mark.parametrize("cli", ["translate", "evaluate"])
def test_a_vit_checkpoint_is_refused_by_translation(vit_run, cli):
    before = checkpoints(vit_run)
    result = translate(vit_run, input="a man\n") if cli == "translate" else evaluate(vit_run)
    assert_refused(result, str(vit_run / "checkpoints" / "best.pt"), "ViTConfig")
    assert checkpoints(vit_run) == before


def test_a_translation_checkpoint_is_refused_by_vit_evaluate(translation_run):
    run_dir = translation_run[0]
    before = checkpoints(run_dir)
    result = run("tasks.vit.evaluate", str(run_dir))
    assert_refused(result, str(run_dir / "checkpoints" / "best.pt"), "TranslationConfig")
    assert checkpoints(run_dir) == before


def test_an_averaged_checkpoint_evaluates_but_is_never_resumed(translation_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(translation_run[0], run_dir)
    averaged = run("zoo.train.average", str(run_dir), "--last", "1")
    assert averaged.returncode == 0, averaged.stderr
    assert evaluate(run_dir, "--checkpoint=averaged").returncode == 0
    for old in (run_dir / "checkpoints").glob("step_*.pt"):
        old.unlink()
    shutil.copy(run_dir / "averaged.pt", run_dir / "checkpoints" / "step_00000002.pt")
    result = resume(translation_run[0], run_dir)
    assert_refused(result, "none of the 1 step checkpoints can be resumed")
    assert "not a step checkpoint (lacks optimizer" in result.stdout  # the warning that renamed it
    assert (run_dir / "checkpoints" / "step_00000002.pt.unreadable").is_file()  # kept, not deleted


# --- missing data, unwritable outputs -----------------------------------------------------------


def test_a_missing_data_dir_is_named(translation_run):
    assert_refused(evaluate(translation_run[0], "--data_dir=/nonexistent/data"), "/nonexistent/data")


def test_a_missing_split_file_is_named(translation_run, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    (corpus / "valid.en").unlink()
    assert_refused(
        evaluate(translation_run[0], f"--data_dir={tmp_path}", "--split=valid"), str(corpus / "valid.en")
    )


def test_a_missing_corpus_folder_is_named_by_train(tmp_path):
    result = run(
        "tasks.translation.train",
        *TRANSLATION,
        f"--data.data_dir={tmp_path}",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, str(tmp_path / "corpus"))


@pytest.mark.parametrize("cli", ["translate", "evaluate"])
def test_output_to_an_unwritable_place_is_refused_before_decoding(translation_run, tmp_path, cli):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = f"--output={blocker / 'out.txt'}"
    result = (
        translate(translation_run[0], target, input="a man\n")
        if cli == "translate"
        else evaluate(translation_run[0], target)
    )
    assert_refused(result, str(blocker / "out.txt"))
    assert blocker.read_text() == ""


@pytest.mark.parametrize(
    "option, named",
    [
        ("--device=gpu", "key 'device'"),
        ("--precision=fp8", "key 'precision'"),
        ("--beam_size=-1", "key 'beam_size'"),
        pytest.param(
            "--device=cuda",
            "no CUDA device",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible"),
        ),
    ],
)
def test_bad_decoding_options_are_one_line(translation_run, option, named):
    assert_refused(translate(translation_run[0], option, input="a man\n"), named)
