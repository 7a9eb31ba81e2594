"""Translation under pytest-benchmark (bench/conftest.py): beam 4 on random weights decoded to the
length limit, zoo against Hugging Face `generate` and CTranslate2 fp32 running zoo's weights, and
zoo's int8 (zoo.quantize) against CTranslate2's int8 on the same weights; with --bench-run
translation=RUN the same engines on a trained run's test set, where each stops on its own (zoo
under its exact stopping rule, and with patience 1, CTranslate2's rule); a training step, zoo
against MarianMTModel. The contenders of bench.translation_speed."""

from pathlib import Path

import pytest

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)
pytest.importorskip("ctranslate2", reason="the peer ctranslate2 is not installed (pip install -e '.[peers]')")

from bench.translation_speed import (  # noqa: E402
    PRESETS,
    full_length_tokens,
    random_contenders,
    trained_contenders,
    trained_decode,
    training_contenders,
)


@pytest.fixture(scope="module")
def preset(preset_of) -> str:
    return preset_of("translation", PRESETS)


@pytest.fixture(scope="module")
def decoders(preset: str, bench_threads: int, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("ct2") / "model"
    return random_contenders(PRESETS[preset], folder, bench_threads, int8=True)


@pytest.fixture(scope="module")
def trained_decoders(run_of, bench_threads: int, tmp_path_factory) -> tuple[dict, dict]:
    run, folder = run_of("translation"), tmp_path_factory.mktemp("ct2") / "model"
    decoders, setup = trained_contenders(trained_decode(run), folder, bench_threads, int8=True)
    return decoders, {**setup, "run": Path(run).name}


@pytest.fixture(scope="module")
def trainers(preset: str) -> tuple[dict, int]:
    return training_contenders(PRESETS[preset])


# (engine, its arithmetic): each arithmetic is a group of its own (the --bench-precision option
# is for training steps; decoding is timed at the engines' own).
BEAM_ENGINES = [
    ("zoo", "fp32"),
    ("generate", "fp32"),
    ("ct2_fp32", "fp32"),
    ("zoo_int8", "int8"),
    ("ct2_int8", "int8"),
]


@pytest.mark.parametrize("engine, arithmetic", BEAM_ENGINES)
def test_beam(measure, decoders: dict, preset: str, engine: str, arithmetic: str) -> None:
    to_the_limit = full_length_tokens(PRESETS[preset])
    tokens = measure(
        decoders[engine],
        "translation beam4-random",
        engine,
        to_the_limit,
        precision=arithmetic,
        preset=preset,
    )
    assert tokens == to_the_limit  # every engine did the same work: no row ended early


# No `generate`: Marian cannot run zoo's trained weights.
TRAINED_ENGINES = [
    ("zoo", "fp32"),
    ("zoo_patience1", "fp32"),
    ("ct2_fp32", "fp32"),
    ("zoo_int8", "int8"),
    ("ct2_int8", "int8"),
]


@pytest.mark.parametrize("engine, arithmetic", TRAINED_ENGINES)
def test_beam_trained(measure, trained_decoders: tuple[dict, dict], engine: str, arithmetic: str) -> None:
    decoders, setup = trained_decoders
    sentences = setup["sentences"]
    tokens = measure(
        decoders[engine], "translation beam4-trained", engine, None, precision=arithmetic, preset=setup["run"]
    )
    assert sentences <= tokens <= sentences * 256  # every sentence ended, within the length limit


@pytest.mark.parametrize("library", ["zoo", "marian"])
def test_train_step(measure, trainers: tuple[dict, int], preset: str, precision: str, library: str) -> None:
    steps, tokens = trainers
    step = steps[f"train/{precision}/{library}"]
    measure(step, "translation train", library, tokens, precision=precision, preset=preset)
