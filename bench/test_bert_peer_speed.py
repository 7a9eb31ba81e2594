"""BERT under pytest-benchmark (bench/conftest.py): a pretraining step (MLM + NSP, AdamW), zoo
against Hugging Face's BertForPreTraining on the same weights (bench.bert_speed's contenders,
with zoo's MLM head at every position as the ablation), and the fine-tuning steps of the three
heads against BertForSequenceClassification, BertForTokenClassification and
BertForQuestionAnswering (bench.bert_finetune_speed's contenders)."""

import pytest
import torch

pytest.importorskip(
    "transformers", reason="the peer transformers is not installed (pip install -e '.[peers]')"
)

from bench import bert_finetune_speed, bert_speed  # noqa: E402

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
