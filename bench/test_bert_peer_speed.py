"""BERT under pytest-benchmark (bench/conftest.py): a pretraining step (MLM + NSP, AdamW), zoo
against Hugging Face's BertForPreTraining on the same weights (bench.bert_speed's contenders,
with zoo's MLM head at every position as the ablation), and the fine-tuning steps of the three
heads against BertForSequenceClassification, BertForTokenClassification and
BertForQuestionAnswering (bench.bert_finetune_speed's contenders); and the encoder's forward of
32 x 128 ids at all-MiniLM-L6-v2's size, zoo against CTranslate2's Encoder on the same weights,
in float32 and int8 (zoo.quantize; bench.int8_speed's contenders)."""

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)

from bench import bert_finetune_speed, bert_speed, int8_speed  # noqa: E402

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def pretraining(preset_of) -> tuple[str, dict, dict]:
    preset = preset_of("bert", bert_speed.PRESETS)
    return preset, *bert_speed.contenders(preset, CPU)


@pytest.fixture(scope="module")
def finetuning(preset_of) -> tuple[str, dict]:
    preset = preset_of("bert_finetune", bert_finetune_speed.PRESETS)
    return preset, bert_finetune_speed.contenders(preset, CPU)


@pytest.mark.parametrize("engine", ["zoo", "hf", "zoo_every_position"])
def test_pretrain_step(measure, pretraining: tuple[str, dict, dict], precision: str, engine: str) -> None:
    preset, steps, setup = pretraining
    step = steps[f"train/{precision}/{engine}"]
    measure(step, "bert pretrain", engine, setup["tokens"], precision=precision, preset=preset)


@pytest.mark.parametrize("library", ["zoo", "hf"])
@pytest.mark.parametrize("head", list(bert_finetune_speed.HEADS))
def test_finetune_step(
    measure, finetuning: tuple[str, dict], precision: str, head: str, library: str
) -> None:
    preset, steps = finetuning
    tokens = int(bert_finetune_speed.batch_of(head, CPU).attention_mask.sum())  # real tokens, not padding
    step = steps[f"{head}/{precision}/{library}"]
    measure(step, f"bert finetune-{head}", library, tokens, precision=precision, preset=preset)


@pytest.fixture(scope="module")
def encoders(bench_threads: int):
    pytest.importorskip(
        "ctranslate2", reason="the peer ctranslate2 is not installed (pip install -e '.[peers]')"
    )
    with int8_speed.bert_contenders(bench_threads) as (fns, hidden, _):
        yield fns, hidden


@pytest.mark.parametrize(
    "engine, arithmetic", [("zoo", "fp32"), ("ct2_fp32", "fp32"), ("zoo_int8", "int8"), ("ct2_int8", "int8")]
)
def test_encoder_forward(measure, encoders: tuple[dict, dict], engine: str, arithmetic: str) -> None:
    fns, hidden = encoders
    tokens = int8_speed.BATCH * int8_speed.LENGTH
    measure(fns[engine], "bert encoder-ct2", engine, tokens, precision=arithmetic, preset="minilm")
    agreement = F.cosine_similarity(hidden[engine], hidden["zoo"], dim=-1).min()
    assert agreement > 0.99  # every engine computed the same encoder (int8 within its rounding)
