"""bench.bert_finetune_speed's steps run (a renamed API in the task breaks here, not in the next
benchmark session), and zoo's step computes Hugging Face's loss: per sentence, per labelled first
piece, per window, not summed."""

import pytest
import torch

pytest.importorskip("transformers")

from bench import bert_finetune_speed  # noqa: E402


def test_every_step_runs_and_zoo_starts_from_hugging_faces_loss() -> None:
    torch.manual_seed(0)
    steps = bert_finetune_speed.contenders("tiny", torch.device("cpu"))
    for head in bert_finetune_speed.HEADS:
        zoo, hf = steps[f"{head}/fp32/zoo"](), steps[f"{head}/fp32/hf"]()
        assert torch.isfinite(zoo) and torch.isfinite(hf)
        # the same weights and batch; the two dropout masks differ, so not to the last digit
        assert zoo.item() == pytest.approx(hf.item(), rel=0.1), head
