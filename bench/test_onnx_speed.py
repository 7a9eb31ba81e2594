"""ONNX Runtime under pytest-benchmark (bench/conftest.py): the zoo's graphs exported through
`torch.onnx` (zoo.convert.onnx) and run by ONNX Runtime, against the zoo's own eager PyTorch on
the same weights, fp32: greedy decoding of one batch (the encoder, then the cached decoder step),
and the forward of BERT, ViT and GPT (the prompts' prefill). The contenders of bench.onnx_speed;
ONNX Runtime is the peer of each group."""

from collections.abc import Callable
from functools import cache

import pytest

pytest.importorskip("onnxruntime", reason="ONNX Runtime is not installed (pip install -e '.[onnx]')")
pytest.importorskip("onnxscript", reason="torch.onnx's exporter needs onnxscript (pip install -e '.[onnx]')")

from bench.onnx_speed import (  # noqa: E402
    bert_contenders,
    gpt_contenders,
    translation_contenders,
    vit_contenders,
)

ENGINES = ["zoo", "onnxruntime"]


@pytest.fixture(scope="module")
def translation(bench_threads: int, tmp_path_factory) -> tuple[dict, int]:
    fns, sentences, same = translation_contenders(tmp_path_factory.mktemp("onnx"), bench_threads)
    assert same, "ONNX Runtime's greedy ids differ from the zoo's"
    return fns, sentences


@pytest.mark.parametrize("engine", ENGINES)
def test_greedy(measure, translation: tuple[dict, int], engine: str) -> None:
    fns, sentences = translation
    measure(fns[engine], "translation greedy-onnx", engine, sentences, unit="sentences")


# graph -> its contenders, its group, and what one call processes
FORWARDS = {
    "bert": (bert_contenders, "bert forward-onnx", "tokens"),
    "vit": (vit_contenders, "vit forward-onnx", "images"),
    "gpt": (gpt_contenders, "gpt prefill-onnx", "tokens"),
}


@pytest.fixture(scope="module")
def forwards(bench_threads: int, tmp_path_factory) -> Callable[[str], tuple[dict, int]]:
    """Each graph's contenders, exported once however many tests ask for them."""
    return cache(lambda graph: FORWARDS[graph][0](tmp_path_factory.mktemp("onnx"), bench_threads))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("graph", list(FORWARDS))
def test_forward(measure, forwards, graph: str, engine: str) -> None:
    fns, units = forwards(graph)
    _, group, unit = FORWARDS[graph]
    measure(fns[engine], group, engine, units, unit=unit)
