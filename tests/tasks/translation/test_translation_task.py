"""The translation task end to end: recipe files, training through the runner, the CLIs."""

import copy
import io
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tasks.translation import evaluate, translate
from tasks.translation import task as translation_task
from tasks.translation.config import TranslationConfig
from tasks.translation.spec import TranslationSpec
from tasks.translation.task import TranslationTask, translate_ids
from zoo.config import load_config
from zoo.train import evaluation, fit
from zoo.verbs.cli import run_verb

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "translation"


def test_demo_recipe_equals_the_built_in_default():
    assert load_config(TranslationConfig, CONFIGS / "demo.yaml") == TranslationConfig()


@pytest.mark.parametrize("name", ["demo", "multi30k", "wmt14_base", "wmt14_big"])
def test_every_recipe_loads(name):
    cfg = load_config(TranslationConfig, CONFIGS / f"{name}.yaml")
    assert cfg.model.dim % cfg.model.num_heads == 0


def test_paper_recipes_have_the_papers_hyperparameters():
    base = load_config(TranslationConfig, CONFIGS / "wmt14_base.yaml")
    big = load_config(TranslationConfig, CONFIGS / "wmt14_big.yaml")
    assert (
        base.model.encoder_layers,
        base.model.dim,
        base.model.ffn_dim,
        base.model.num_heads,
        base.model.dropout,
    ) == (6, 512, 2048, 8, 0.1)
    assert (big.model.dim, big.model.ffn_dim, big.model.num_heads, big.model.dropout) == (1024, 4096, 16, 0.3)
    for cfg in (base, big):
        assert (cfg.optim.betas, cfg.optim.eps, cfg.schedule.warmup_steps) == ([0.9, 0.98], 1e-9, 4000)
        assert cfg.label_smoothing == 0.1 and cfg.decode.beam_size == 4 and cfg.decode.alpha == 0.6
        # the peak of lr = d^-0.5 min(step^-0.5, step warmup^-1.5) is d^-0.5 warmup^-0.5
        assert cfg.optim.lr == pytest.approx(cfg.model.dim**-0.5 * 4000**-0.5, rel=1e-5)


def test_paper_learning_rate_follows_the_model_width():
    wider = load_config(TranslationConfig, CONFIGS / "wmt14_base.yaml", ["--model.dim=1024"])
    assert wider.optim.lr == pytest.approx(1024**-0.5 * 4000**-0.5)
    longer = load_config(TranslationConfig, CONFIGS / "wmt14_base.yaml", ["--schedule.warmup_steps=8000"])
    assert longer.optim.lr == pytest.approx(512**-0.5 * 8000**-0.5)
    fixed = load_config(
        TranslationConfig, CONFIGS / "wmt14_base.yaml", ["--model.dim=1024", "--optim.lr=1e-4"]
    )
    assert fixed.optim.lr == 1e-4  # an explicit rate still wins


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A tiny model trained through the runner on the built-in synthetic corpus."""
    out = tmp_path_factory.mktemp("translation")
    cfg = load_config(
        TranslationConfig,
        None,
        [
            f"train.out_dir={out}",
            "train.max_steps=250",
            "train.eval_every=0",
            "train.progress=false",
            "train.tensorboard=false",
            "train.log_every=50",
            "data.synthetic_train=8000",
            "data.synthetic_valid=100",
            "data.synthetic_test=100",
            "data.vocab_size=1000",
            "data.max_tokens=2048",
            "model.dim=128",
            "model.ffn_dim=256",
            "model.dropout=0.0",
            "optim.lr=2e-3",
            "schedule.name=cosine",
            "schedule.warmup_steps=50",
        ],
    )
    task = TranslationTask(cfg)
    result = fit(cfg, task)
    return out, task, result


def test_tiny_model_learns_the_synthetic_corpus(trained_run):
    _, task, result = trained_run
    # An untrained model scores ~0; this one reached 25.9 (greedy) when the test was written.
    assert result.metrics["bleu"] >= 15.0, result.metrics
    with evaluation(result.model) as model:
        test = task.evaluate(model, "test", beam_size=4)
    assert test["bleu"] >= 15.0, test
    assert task.artifacts() == {"spm.model": (result.run_dir / "spm.model").read_bytes()}


def test_evaluate_cli_scores_the_test_split(trained_run, capsys, monkeypatch):
    out, _, _ = trained_run
    searches = []
    real = translation_task.beam_search
    monkeypatch.setattr(
        translation_task, "beam_search", lambda *a, **kw: searches.append(kw) or real(*a, **kw)
    )
    result = evaluate.main([str(out), "--checkpoint", "last", "--beam_size", "2"])
    assert result["sentences"] == 100 and result["bleu"] >= 15.0 and result["patience"] == 0.0
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in capsys.readouterr().out  # the signature
    assert searches and all(kw["patience"] is None and kw["beam_size"] == 2 for kw in searches)
    searches.clear()
    patient = evaluate.main([str(out), "--checkpoint", "last", "--beam_size", "2", "--patience", "1"])
    assert patient["patience"] == 1.0
    assert searches and all(kw["patience"] == 1.0 for kw in searches)  # it reaches the search


def test_evaluate_cli_refuses_a_negative_patience(trained_run, capsys):
    out, _, _ = trained_run
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([str(out), "--checkpoint", "last", "--patience", "-1"])
    assert exit_info.value.code == 2
    assert "patience" in capsys.readouterr().err


def test_translate_n_best_gives_each_line_its_best_hypotheses_in_order(trained_run, monkeypatch, capsys):
    out, task, result = trained_run
    sources = task.data.test.sources[:4]

    def translate_lines(*extra: str) -> list:
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(sources) + "\n"))
        return translate.main([str(out), "--checkpoint", "last", "--beam_size", "4", *extra])

    scored = translate_lines("--n_best=3", "--json")
    capsys.readouterr()
    translate_lines("--n_best=3")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [h["translation"] for hypotheses in scored for h in hypotheses] and len(lines) == 12
    for hypotheses in scored:
        scores = [h["score"] for h in hypotheses]
        assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    # The library under the CLI: n_best=1 is the best-only search; more only searches longer.
    decode, ids = task.cfg.decode, task.data.test.pairs.src
    with evaluation(result.model) as model:
        best = translate_ids(model, ids, decode, beam_size=4, max_tokens=500)
        one = translate_ids(model, ids, decode, beam_size=4, max_tokens=500, n_best=1)
        three = translate_ids(model, ids, decode, beam_size=4, max_tokens=500, n_best=3)
    assert [hyps[0][0] for hyps in one] == best
    assert all(t[0][1] >= o[0][1] - 1e-5 and len(t) == 3 for t, o in zip(three, one))


def test_translate_samples_from_a_seed_and_top_k_one_is_greedy(trained_run, monkeypatch, capsys):
    out, task, _ = trained_run
    sources = task.data.test.sources[:8]

    def translate_lines(*extra: str) -> list[str]:
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(sources) + "\n"))
        return translate.main([str(out), "--checkpoint", "last", *extra])

    hot = ["--do_sample", "--temperature=1.5"]
    assert translate_lines(*hot, "--seed=1") == translate_lines(*hot, "--seed=1")
    assert translate_lines(*hot, "--seed=1") != translate_lines(*hot, "--seed=2")
    assert translate_lines("--do_sample", "--top_k=1") == translate_lines("--beam_size=1")
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([str(out), "--checkpoint", "last", "--do_sample"])
    assert exit_info.value.code == 2 and "do_sample" in capsys.readouterr().err


def test_an_ensemble_of_copies_translates_as_the_model_and_other_vocabularies_are_refused(
    trained_run, tmp_path, capsys
):
    out, task, _ = trained_run
    copy_of_run = tmp_path / "copy.pt"
    shutil.copy(sorted((out / "checkpoints").glob("step_*.pt"))[-1], copy_of_run)
    alone = evaluate.main([str(out), "--checkpoint", "last", "--beam_size", "2", "--limit", "30"])
    both = [
        str(out),
        "--checkpoint",
        "last",
        "--ensemble",
        str(copy_of_run),
        "--beam_size",
        "2",
        "--limit",
        "30",
    ]
    together = evaluate.main(both)
    assert together["bleu"] == alone["bleu"] and together["ensemble"] == [str(out), str(copy_of_run)]
    assert "and 1 more, an ensemble" in capsys.readouterr().out
    other = tmp_path / "other"
    cfg = load_config(TranslationConfig, None, [
        f"train.out_dir={other}", "train.max_steps=1", "train.eval_every=0", "train.progress=false",
        "train.tensorboard=false", "data.synthetic_train=300", "data.synthetic_valid=10",
        "data.synthetic_test=10", "data.vocab_size=150", "model.dim=32", "model.ffn_dim=64",
    ])  # fmt: skip
    fit(cfg, TranslationTask(cfg))
    for verb in ("evaluate", "attention"):
        member = (
            ["--ensemble", str(other)] if verb == "evaluate" else ["--ensemble", str(copy_of_run), "--text=a"]
        )
        argv = [str(out), "--checkpoint", "last", *member]
        with pytest.raises(SystemExit) as exit_info:
            (evaluate.main if verb == "evaluate" else partial(run_verb, TranslationSpec(), "attention"))(argv)
        assert exit_info.value.code == 2
        assert ("another vocabulary" if verb == "evaluate" else "drop --ensemble") in capsys.readouterr().err


def test_translate_target_prefix_begins_each_translation_with_its_prefix(trained_run, monkeypatch):
    out, task, _ = trained_run
    sources = task.data.test.sources[:4]

    def translate_lines(lines: list[str], *extra: str) -> list[str]:
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
        return translate.main([str(out), "--checkpoint", "last", "--beam_size", "1", *extra])

    free = translate_lines(sources)
    # Its own first word as the prefix: greedy search then writes the same translation.
    own = [f"{source}\t{translation.split()[0]}" for source, translation in zip(sources, free)]
    assert translate_lines(own, "--target_prefix") == free
    chosen = ["Zwei Hunde", "", "Sophie", "Der"]  # a line without a TAB has no prefix
    lines = [f"{s}\t{p}" if p else s for s, p in zip(sources, chosen)]
    forced = translate_lines(lines, "--target_prefix", "--beam_size", "3")
    assert all(t.startswith(p) for t, p in zip(forced, chosen)) and forced != free
    assert forced[1] == translate_lines(sources[1:2], "--beam_size", "3")[0]


def test_translate_and_attention_read_stdin_from_a_lone_checkpoint(trained_run, tmp_path):
    """From a lone checkpoint file: the vocabulary travels inside it."""
    out, task, _ = trained_run
    sources = "\n".join(task.data.test.sources[:3]) + "\n"
    png = tmp_path / "attention.png"
    lone = tmp_path / "elsewhere" / "model.pt"
    lone.parent.mkdir()
    shutil.copy(sorted((out / "checkpoints").glob("step_*.pt"))[-1], lone)
    outputs = []
    for command in (
        ["-m", "tasks.translation.translate", str(lone), "--beam_size", "2"],
        ["-m", "zoo", "attention", "translation", str(lone), "--beam_size", "2", "--output", str(png)],
    ):
        proc = subprocess.run(
            [sys.executable, *command], input=sources, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.splitlines())
    translations, drawn = outputs
    assert len(translations) == 3 and all(translations)
    assert drawn == translations[:1]  # attention prints the translation of the sentence it drew
    assert png.stat().st_size > 10_000


@pytest.mark.parametrize(
    "cli, options",
    [
        (
            evaluate,
            [
                "--run",
                "--checkpoint",
                "--beam_size",
                "--patience",
                "--device",
                "--precision",
                "--split",
                "--alpha",
                "--data_dir",
                "--output",
            ],
        ),
        (
            translate,
            [
                "--run",
                "--checkpoint",
                "--beam_size",
                "--patience",
                "--input",
                "--output",
                "--max_tokens",
                "--truncate",
            ],
        ),
    ],
)
def test_help_lists_every_option(cli, options, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert all(f"  {option}=" in text for option in options), text


def test_translate_cli_names_a_missing_run_directory(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        translate.main([str(tmp_path / "nope")])
    assert exit_info.value.code == 2
    assert "nope" in capsys.readouterr().err


def test_tokens_per_step_sets_the_runs_accumulation_not_the_recipe():
    cfg = TranslationConfig()
    assert TranslationTask(cfg).grad_accum(1) is None  # 0: train.grad_accum applies
    cfg.data.tokens_per_step, cfg.data.max_tokens = 25000, 4096
    recipe = copy.deepcopy(cfg)
    task = TranslationTask(cfg)
    assert (task.grad_accum(1), task.grad_accum(2), task.grad_accum(8)) == (7, 4, 1)
    assert cfg == recipe
