"""Export to CTranslate2: the engine's greedy and beam translations equal zoo's, token for token."""

from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tasks.translation import export
from tasks.translation.config import TranslationConfig
from tasks.translation.spec import TranslationOptions, TranslationSpec
from tasks.translation.task import TranslationTask, translate_ids
from zoo.config import load_config
from zoo.convert.ctranslate2 import search_options
from zoo.decode.prefix import ForcedPrefixes
from zoo.train import evaluation, fit, load_trained

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="the export needs ctranslate2 (pip install ctranslate2)"
)
SENTENCES = 20


@pytest.fixture(scope="module", params=[False, True], ids=["post_norm", "pre_norm"])
def trained_run(request, tmp_path_factory):
    """A tiny model trained for a few dozen steps through the runner on the synthetic corpus
    (enough for most sentences to end before the length limit)."""
    out = tmp_path_factory.mktemp("translation")
    cfg = load_config(
        TranslationConfig,
        None,
        [
            f"train.out_dir={out}",
            "train.max_steps=60",
            "train.eval_every=0",
            "train.progress=false",
            "train.tensorboard=false",
            "train.log_every=30",
            "data.synthetic_train=2000",
            "data.synthetic_valid=50",
            "data.synthetic_test=50",
            "data.vocab_size=300",
            "data.max_tokens=1024",
            "model.dim=64",
            "model.ffn_dim=128",
            "model.dropout=0.0",
            "model.encoder_layers=2",
            "model.decoder_layers=2",
            f"model.pre_norm={str(request.param).lower()}",
            "optim.lr=3e-3",
            "schedule.name=cosine",
            "schedule.warmup_steps=10",
        ],
    )
    task = TranslationTask(cfg)
    fit(cfg, task)
    return out, task


class Both(NamedTuple):
    """The run's last weights on both engines, and what both are given."""

    translator: Any  # zoo's, from the run
    engine: Any  # CTranslate2's, from the export
    exported: Path
    decode: Any  # the run's decoding without a length penalty (the two engines' formulas differ)
    test: Any  # the test split's pairs
    sources: list[list[int]]  # the first SENTENCES test sources
    vocabulary: dict[str, int]  # piece -> id


def both_engines(trained_run, folder: Path) -> Both:
    run, task = trained_run
    exported = export.main([str(run), "--format", "ctranslate2", str(folder / "ct2"), "--checkpoint", "last"])
    trained = load_trained(run, TranslationConfig, which="last")
    translator = TranslationSpec().load([trained], TranslationOptions(run=str(run)))
    tokenizer = translator.tokenizer
    test = task.data.split("test").pairs
    return Both(
        translator,
        ctranslate2.Translator(str(exported), intra_threads=1),
        exported,
        replace(translator.decode, alpha=0.0),
        test,
        [test.src.row(i) for i in range(SENTENCES)],
        {piece: i for i, piece in enumerate(tokenizer.pieces(range(tokenizer.vocab_size)))},
    )


@pytest.mark.parametrize("prefixed", [False, True], ids=["free", "target_prefix"])
@pytest.mark.parametrize("beam", [1, 4])
def test_ctranslate2_search_equals_zoo_search(trained_run, tmp_path, beam, prefixed):
    """Greedy, and beam 4 without a length penalty: CTranslate2 then stops a sentence when its
    top-ranked candidate ends, zoo when no live beam can beat a finished hypothesis (the same
    result; with a penalty their formulas differ: GNMT's against length ** alpha). With target
    prefixes (another sentence's first reference tokens), both begin there and go on alike."""
    both = both_engines(trained_run, tmp_path)
    tokenizer, decode, test, sources = both.translator.tokenizer, both.decode, both.test, both.sources
    prefixes = [test.tgt.row((i + 1) % SENTENCES)[: 1 + i % 3] if prefixed else [] for i in range(SENTENCES)]
    forced = ForcedPrefixes(prefixes, tokenizer.vocab_size) if prefixed else None
    with evaluation(both.translator.model) as model:
        ours = translate_ids(model, sources, decode, beam_size=beam, max_tokens=4096, prefixes=forced)

    pieces = [tokenizer.pieces(ids) for ids in sources]
    theirs = []
    for source, ids, prefix in zip(
        pieces, sources, prefixes
    ):  # one call each: zoo's limit depends on the source
        options = search_options(tokenizer, len(ids), max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)
        if prefixed:
            options["target_prefix"] = [tokenizer.pieces(prefix)]
        result = both.engine.translate_batch([source], beam_size=beam, length_penalty=0.0, **options)
        theirs.append([both.vocabulary[piece] for piece in result[0].hypotheses[0]])
    assert ours == theirs
    assert all(ids[: len(prefix)] == prefix for ids, prefix in zip(ours, prefixes))
    assert (
        sum(len(ids) < len(src) + 1 + decode.max_len_b for ids, src in zip(ours, sources)) >= SENTENCES // 2
    )
    assert (both.exported / "spm.model").read_bytes() == tokenizer.model


def test_ctranslate2_n_best_equals_zoo_n_best(trained_run, tmp_path):
    """beam 4, the 3 best: the same hypotheses in the same order. Their scores are not compared:
    CTranslate2's were 0.006-0.02 higher than zoo's summed log-probabilities, cause not examined."""
    both = both_engines(trained_run, tmp_path)
    tokenizer, decode, sources = both.translator.tokenizer, both.decode, both.sources
    with evaluation(both.translator.model) as model:
        ours = translate_ids(model, sources, decode, beam_size=4, max_tokens=4096, n_best=3)
    for ids, mine in zip(sources, ours):
        options = search_options(tokenizer, len(ids), max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)
        (result,) = both.engine.translate_batch(
            [tokenizer.pieces(ids)], beam_size=4, num_hypotheses=3, length_penalty=0.0, **options
        )
        assert [h for h, _ in mine] == [[both.vocabulary[p] for p in hyp] for hyp in result.hypotheses]


def test_export_refuses_an_existing_directory_and_unknown_formats(trained_run, tmp_path, capsys):
    run, _ = trained_run
    (tmp_path / "taken").mkdir()
    for argv, message in (
        ([str(run), str(tmp_path / "taken")], "exists"),
        ([str(run), "--format", "tflite", str(tmp_path / "x")], "--format"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            export.main(argv + ["--checkpoint", "last"])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
