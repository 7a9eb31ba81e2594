"""bench.gpu's benches run end to end on the CPU at toy sizes (the GPU is lent rarely: a broken
bench found there costs its minutes), torch.compile on dynamo's eager backend."""

from __future__ import annotations

import functools

import pytest
import torch

from bench import bert_speed, gpu, translation_speed, vit_speed
from tests.zoo.decode.test_lm_static import eager_step
from zoo.decode import lm_static

CPU = torch.device("cpu")


@pytest.fixture
def toy_sizes(monkeypatch):
    monkeypatch.setitem(vit_speed.PRESETS, "vit_base", vit_speed.PRESETS["small"])
    monkeypatch.setitem(bert_speed.PRESETS, "base", bert_speed.PRESETS["tiny"])
    monkeypatch.setitem(translation_speed.PRESETS, "base", translation_speed.PRESETS["small"])
    monkeypatch.setitem(gpu.SIZES, "realistic", {"vit": 2, "bert": 2, "bert512": 1, "translation": 2})
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("what", ["vit", "bert", "bert512", "translation"])
def test_training_benches_time_every_contender_and_count_its_flops(what, toy_sizes):
    result = gpu.training_rows(
        what, CPU, 1, True, {"bf16": 1e12}, sizes="realistic", compile_peer=False, precisions=("bf16",)
    )
    modes = {(row["mode"], row["library"]) for row in result["rows"]}
    assert ("train", "zoo") in modes and ("train+compile", "zoo") in modes
    assert all(row["seconds"] > 0 for row in result["rows"])
    assert all(row["mfu"] > 0 for row in result["rows"] if row["mode"] == "train")
    assert "| train+compile | bf16 | zoo |" in gpu.markdown({**REPORT, what: result}, "gpu_cpu.json")


def test_the_gpt_decode_bench_makes_every_engines_ids(monkeypatch):
    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    torch._dynamo.reset()
    result = gpu.gpt_decode_rows(CPU, 1, preset="micro", prompt=4, new=3)
    torch._dynamo.reset()
    engines = {"zoo", "zoo_static_compiled", "hf", "hf_static"}
    for batch in ("1", "8"):
        assert set(result["batches"][batch]["tokens_per_s"]) == engines
    assert "| 8 |" in gpu.markdown({**REPORT, "gpt_decode": result}, "gpu_cpu.json")


REPORT = {
    "hardware": "cpu",
    "command": "test",
    "torch": torch.__version__,
    "repeats": 1,
    "datasheet_peak": {"bf16": 1e12},
    "measured_ceiling": {"bf16": 1e12},
}
