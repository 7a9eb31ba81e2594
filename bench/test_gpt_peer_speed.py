"""GPT under pytest-benchmark (bench/conftest.py), fp32: a training step, zoo against Hugging
Face's GPT2LMHeadModel on the same weights; greedy generation with the KV cache (the prompts'
prefill alone, and the whole call for every new id), zoo against Hugging Face `generate` and
CTranslate2's Generator on zoo's weights. The contenders of bench.gpt_speed."""

import copy
from functools import partial

import pytest
import torch

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)
pytest.importorskip("ctranslate2", reason="the peer ctranslate2 is not installed (pip install -e '.[peers]')")

from bench.gpt_speed import (  # noqa: E402
    BATCHES,
    MIN_AGREEMENT,
    PRESETS,
    agreement,
    ct2_generator,
    engines,
    models,
    random_prompts,
    step_products,
    training_contenders,
)
from zoo.quantize import quantize_int8  # noqa: E402

ENGINES = ["zoo", "zoo_row_major", "zoo_compiled", "hf", "ct2_fp32"]


@pytest.fixture(scope="module")
def preset(preset_of) -> str:
    return preset_of("gpt", PRESETS)


@pytest.fixture(scope="module")
def plain_zoo(preset: str):
    """zoo's GPT of the preset, GPT-2's initialisation (the step products' weights)."""
    return models(preset, PRESETS[preset].vocab)[0]


@pytest.fixture(scope="module")
def trainers(preset: str) -> tuple[dict, int]:
    """The steps, their first losses checked equal by training_contenders."""
    return training_contenders(preset, PRESETS[preset])


@pytest.fixture(scope="module")
def weights(preset: str, tmp_path_factory) -> tuple:
    """zoo's and Hugging Face's GPT on the same weights, and the folder CTranslate2's copy of them
    is converted into once."""
    zoo, hf = models(preset, PRESETS[preset].vocab, noise=0.3)
    return zoo, hf, tmp_path_factory.mktemp("ct2") / "model"


@pytest.fixture(scope="module")
def generators(preset: str, weights: tuple, bench_threads: int) -> tuple[dict, dict]:
    """Each batch size's engines, and zoo's ids for each (the reference Hugging Face must equal)."""
    p, (zoo, hf, folder) = PRESETS[preset], weights
    ct2 = ct2_generator(zoo, folder, bench_threads)
    runs = {batch: engines(zoo, hf, ct2, random_prompts(p, batch)) for batch in BATCHES}
    return runs, {batch: run["zoo"](p.new) for batch, run in runs.items()}


@pytest.fixture(scope="module")
def int8_generators(preset: str, weights: tuple, bench_threads: int) -> dict:
    """Each batch size's int8 engines: zoo's quantized copy (also on the static cache, its step
    compiled) and CTranslate2 at int8."""
    p, (zoo, hf, folder) = PRESETS[preset], weights
    ct2 = ct2_generator(zoo, folder, bench_threads, "int8")
    int8 = quantize_int8(copy.deepcopy(zoo))
    runs = {batch: engines(int8, hf, ct2, random_prompts(p, batch)) for batch in BATCHES}
    names = {"zoo": "zoo_int8", "zoo_compiled": "zoo_int8_compiled", "ct2_fp32": "ct2_int8"}
    return {batch: {names[e]: run[e] for e in names} for batch, run in runs.items()}


@pytest.mark.parametrize("library", ["zoo", "hf"])
def test_train_step(measure, trainers: tuple[dict, int], preset: str, library: str) -> None:
    steps, tokens = trainers
    loss = measure(steps[library], "gpt train", library, tokens, preset=preset)
    assert torch.isfinite(loss)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", BATCHES)
def test_prefill(measure, generators: tuple[dict, dict], preset: str, batch: int, engine: str) -> None:
    """The call for one new id: the prompts' forward (prompt tokens per call)."""
    p, (runs, _) = PRESETS[preset], generators
    ids = measure(
        partial(runs[batch][engine], 1), f"gpt prefill b={batch}", engine, batch * p.prompt, preset=preset
    )
    assert [len(row) for row in ids] == [1] * batch


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", BATCHES)
def test_generate(measure, generators: tuple[dict, dict], preset: str, batch: int, engine: str) -> None:
    """Prefill and every new id (new ids per call; end-of-text forbidden until the last)."""
    p, (runs, zoo_ids) = PRESETS[preset], generators
    ids = measure(
        partial(runs[batch][engine], p.new), f"gpt greedy b={batch}", engine, batch * p.new, preset=preset
    )
    assert [len(row) for row in ids] == [p.new] * batch
    if engine in ("hf", "zoo_row_major", "zoo_compiled"):
        # The same weights, greedy: the same ids, but for near ties among GPT-2 small's 50,257
        # random logits, where sums in another order may choose the other (bench.gpt_speed's rule).
        assert agreement(ids, zoo_ids[batch]) >= MIN_AGREEMENT


@pytest.mark.parametrize("engine", ["zoo_int8", "zoo_int8_compiled", "ct2_int8"])
@pytest.mark.parametrize("batch", BATCHES)
def test_generate_int8(measure, int8_generators: dict, preset: str, batch: int, engine: str) -> None:
    """As test_generate, the engines at int8 (their ids differ: each rounds its own way)."""
    new = PRESETS[preset].new
    run = partial(int8_generators[batch][engine], new)
    ids = measure(run, f"gpt greedy b={batch}", engine, batch * new, precision="int8", preset=preset)
    assert [len(row) for row in ids] == [new] * batch


# The split is for one row only (step_products offers it there).
LAYOUTS = ("zoo_column_major", "row_major")
STEP_CASES = [(1, "zoo_split")] + [(rows, layout) for rows in (1, 2, 4, 8) for layout in LAYOUTS]


@pytest.mark.parametrize("rows, layout", STEP_CASES)
def test_step_products(measure, plain_zoo, preset: str, rows: int, layout: str) -> None:
    """A decoding step's products each way (rows per call): why `generate` stores the weights
    column-major or splits the products for one row, and only for one (zoo.blocks.linear)."""
    steps = step_products(plain_zoo, rows)
    logits = measure(steps[layout], f"gpt step products rows={rows}", layout, rows, preset=preset)
    other = steps["row_major" if layout != "row_major" else "zoo_column_major"]()
    torch.testing.assert_close(logits, other, rtol=1e-4, atol=1e-4)  # the layouts' sums, reordered
