"""ONNX Runtime under pytest-benchmark (bench/conftest.py): the zoo's graphs exported through
`torch.onnx` (zoo.convert.onnx) and run by ONNX Runtime, against the zoo's own eager PyTorch on
the same weights, fp32: greedy decoding of one batch (the encoder, then the cached decoder step),
and the forward of BERT, ViT and GPT (the prompts' prefill). The contenders of bench.onnx_speed;
ONNX Runtime is the peer of each group."""

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


@pytest.fixture(scope="module")
def bert(bench_threads: int, tmp_path_factory) -> tuple[dict, int]:
    return bert_contenders(tmp_path_factory.mktemp("onnx"), bench_threads)


@pytest.mark.parametrize("engine", ENGINES)
def test_greedy(measure, translation: tuple[dict, int], engine: str) -> None:
    fns, sentences = translation
    measure(fns[engine], "translation greedy-onnx", engine, sentences, unit="sentences")


@pytest.mark.parametrize("engine", ENGINES)
def test_bert_forward(measure, bert: tuple[dict, int], engine: str) -> None:
    fns, tokens = bert
    measure(fns[engine], "bert forward-onnx", engine, tokens)


@pytest.fixture(scope="module")
def vit(bench_threads: int, tmp_path_factory) -> tuple[dict, int]:
    return vit_contenders(tmp_path_factory.mktemp("onnx"), bench_threads)


@pytest.fixture(scope="module")
def gpt(bench_threads: int, tmp_path_factory) -> tuple[dict, int]:
    return gpt_contenders(tmp_path_factory.mktemp("onnx"), bench_threads)


@pytest.mark.parametrize("engine", ENGINES)
def test_vit_forward(measure, vit: tuple[dict, int], engine: str) -> None:
    fns, images = vit
    measure(fns[engine], "vit forward-onnx", engine, images, unit="images")


@pytest.mark.parametrize("engine", ENGINES)
def test_gpt_prefill(measure, gpt: tuple[dict, int], engine: str) -> None:
    fns, tokens = gpt
    measure(fns[engine], "gpt prefill-onnx", engine, tokens)
