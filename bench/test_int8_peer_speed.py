"""int8 under pytest-benchmark (bench/conftest.py): zoo's `--precision int8` (zoo.quantize: torch's
dynamic quantization, one activation scale per row) against CTranslate2's `compute_type="int8"`
running the same weights, each pair in a group of its own (precision "int8"): beam 4 on random
translation weights decoded to the length limit (bench.translation_speed's contenders), and greedy
GPT generation with the KV cache (bench.gpt_speed's). Their float32 runs are the groups of
test_translation_peer_speed.py and test_gpt_peer_speed.py; trained models and quality:
`python -m bench.int8_speed`."""

import copy
from functools import partial

import pytest

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)
pytest.importorskip("ctranslate2", reason="the peer ctranslate2 is not installed (pip install -e '.[peers]')")

from bench import gpt_speed, translation_speed  # noqa: E402
from zoo.quantize import quantize_int8  # noqa: E402

ENGINES = ["zoo_int8", "ct2_int8"]


@pytest.fixture(scope="module")
def translators(preset_of, bench_threads: int, tmp_path_factory) -> tuple[str, dict]:
    preset = preset_of("translation", translation_speed.PRESETS)
    folder = tmp_path_factory.mktemp("ct2") / "model"
    fns = translation_speed.random_contenders(
        translation_speed.PRESETS[preset], folder, bench_threads, int8=True
    )
    return preset, fns


@pytest.fixture(scope="module")
def generators(preset_of, bench_threads: int, tmp_path_factory) -> tuple[str, dict]:
    """Each batch size's two int8 engines on one model's weights."""
    preset = preset_of("gpt", gpt_speed.PRESETS)
    p = gpt_speed.PRESETS[preset]
    zoo, hf = gpt_speed.models(preset, p.vocab, noise=0.3)
    ct2 = gpt_speed.ct2_generator(zoo, tmp_path_factory.mktemp("ct2") / "model", bench_threads, "int8")
    int8 = quantize_int8(copy.deepcopy(zoo))
    runs = {}
    for batch in gpt_speed.BATCHES:
        run = gpt_speed.engines(int8, hf, ct2, gpt_speed.random_prompts(p, batch))
        runs[batch] = {"zoo_int8": run["zoo"], "ct2_int8": run["ct2_fp32"]}  # the CTranslate2 given: int8
    return preset, runs


@pytest.mark.parametrize("engine", ENGINES)
def test_beam(measure, translators: tuple[str, dict], engine: str) -> None:
    preset, fns = translators
    to_the_limit = translation_speed.full_length_tokens(translation_speed.PRESETS[preset])
    tokens = measure(
        fns[engine], "translation beam4-random", engine, to_the_limit, precision="int8", preset=preset
    )
    assert tokens == to_the_limit  # both did the same work: no row ended early


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", gpt_speed.BATCHES)
def test_generate(measure, generators: tuple[str, dict], batch: int, engine: str) -> None:
    """Prefill and every new id (new ids per call; end-of-text forbidden until the last)."""
    preset, runs = generators
    new = gpt_speed.PRESETS[preset].new
    ids = measure(
        partial(runs[batch][engine], new),
        f"gpt greedy b={batch}",
        engine,
        batch * new,
        precision="int8",
        preset=preset,
    )
    assert [len(row) for row in ids] == [new] * batch
