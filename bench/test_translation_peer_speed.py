"""Translation under pytest-benchmark (bench/conftest.py): beam 4 on random weights decoded to the
length limit, zoo against Hugging Face `generate` and CTranslate2 fp32 running zoo's weights; a
training step, zoo against MarianMTModel. The contenders of bench.translation_speed."""

import pytest

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)
pytest.importorskip("ctranslate2", reason="the peer ctranslate2 is not installed (pip install -e '.[peers]')")

from bench.translation_speed import (  # noqa: E402
    PRESETS,
    full_length_tokens,
    random_contenders,
    training_contenders,
)


@pytest.fixture(scope="module")
def preset(preset_of) -> str:
    return preset_of("translation", PRESETS)


@pytest.fixture(scope="module")
def decoders(preset: str, bench_threads: int, tmp_path_factory) -> dict:
    return random_contenders(PRESETS[preset], tmp_path_factory.mktemp("ct2") / "model", bench_threads)


@pytest.fixture(scope="module")
def trainers(preset: str) -> tuple[dict, int]:
    return training_contenders(PRESETS[preset])


@pytest.mark.parametrize("engine", ["zoo", "generate", "ct2_fp32"])
def test_beam(measure, decoders: dict, preset: str, engine: str) -> None:
    to_the_limit = full_length_tokens(PRESETS[preset])
    tokens = measure(decoders[engine], "translation beam4-random", engine, to_the_limit, preset=preset)
    assert tokens == to_the_limit  # every engine did the same work: no row ended early


@pytest.mark.parametrize("library", ["zoo", "marian"])
def test_train_step(measure, trainers: tuple[dict, int], preset: str, precision: str, library: str) -> None:
    steps, tokens = trainers
    step = steps[f"train/{precision}/{library}"]
    measure(step, "translation train", library, tokens, precision=precision, preset=preset)
