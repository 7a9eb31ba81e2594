"""ONNX Runtime under pytest-benchmark (bench/conftest.py): the zoo's graphs exported through
`torch.onnx` (zoo.convert.onnx) and run by ONNX Runtime, against the zoo's own eager PyTorch on
the same weights, fp32: greedy decoding of one batch (the encoder, then the cached decoder step)
and a BERT forward. The contenders of bench.onnx_speed; ONNX Runtime is the peer of each group."""

import pytest

pytest.importorskip("onnxruntime", reason="ONNX Runtime is not installed (pip install -e '.[onnx]')")
pytest.importorskip("onnxscript", reason="torch.onnx's exporter needs onnxscript (pip install -e '.[onnx]')")

from bench.onnx_speed import bert_contenders, translation_contenders  # noqa: E402

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
