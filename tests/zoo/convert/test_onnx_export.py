"""zoo.convert.onnx for BERT (the pretrained encoder and the fine-tuning heads), ViT and GPT: under
ONNX Runtime each exported graph gives zoo's outputs within 1e-4 on a batch and lengths other
than the export's example inputs (the axes are dynamic), and GPT's graph fed its own present
(a prompt, single tokens, then a chunk) gives the full forward's logits. (The translation
Transformer: test_onnx_translation.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.models.bert import Bert
from zoo.models.bert_heads import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from zoo.models.gpt import GPT
from zoo.models.vit import ViT

pytest.importorskip("onnxscript", reason="needs the onnx extra (pip install 'zoo[onnx]')")
pytest.importorskip("onnxruntime", reason="needs the onnx extra (pip install 'zoo[onnx]')")

from zoo.convert.onnx.export import MODEL, export_bert, export_gpt, export_vit, layer_names  # noqa: E402
from zoo.convert.onnx.runtime import session  # noqa: E402

VOCAB, TOLERANCE = 50, 1e-4


def noisy(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with noise on every parameter (norms and biases too, so a misplaced one shows)."""
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return model.eval()


def bert() -> Bert:
    torch.manual_seed(0)
    return Bert(vocab_size=VOCAB, dim=32, num_layers=2, num_heads=4, ffn_dim=64, max_len=64)


BERTS = {
    "pretrained": lambda: noisy(bert()),
    "sequence_classification": lambda: noisy(BertForSequenceClassification(bert(), 3)),
    "token_classification": lambda: noisy(BertForTokenClassification(bert(), 5)),
    "question_answering": lambda: noisy(BertForQuestionAnswering(bert())),
}


@pytest.mark.parametrize("kind", list(BERTS))
def test_bert_gives_zoo_outputs_at_real_tokens(kind, tmp_path):
    model = BERTS[kind]()
    export_bert(model, tmp_path)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(SPECIAL_IDS.reserved, VOCAB, (3, 11), generator=generator)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 6:] = mask[2, 9:] = False
    ids[~mask] = model.pad_id if isinstance(model, Bert) else model.bert.pad_id
    types = (torch.arange(11) >= 5).long().expand(3, -1)
    ours = session(tmp_path / MODEL).run(
        None, {"input_ids": ids.numpy(), "token_type_ids": types.numpy(), "attention_mask": mask.numpy()}
    )
    with torch.no_grad():
        if isinstance(model, Bert):
            hidden = model.encode(ids, types, mask)
            ref = (hidden, model.pool(hidden))
        else:
            ref = model(ids, types, mask)
    ref = ref if isinstance(ref, tuple) else (ref,)
    assert len(ours) == len(ref)
    for out, expected in zip(ours, ref):
        # padding positions skip the feed-forward in zoo's encoder (zoo.blocks.packing): never read
        at_real = (lambda x: x[mask.numpy()]) if expected.shape[:2] == ids.shape else (lambda x: x)
        np.testing.assert_allclose(at_real(out), at_real(expected.numpy()), atol=TOLERANCE)


@pytest.mark.parametrize("pool", ["token", "avg"])
def test_vit_gives_zoo_logits(pool, tmp_path):
    torch.manual_seed(0)
    model = noisy(
        ViT(image_size=16, patch_size=4, in_chans=3, num_classes=5, dim=32, encoder_layers=2, num_heads=4,
            ffn_dim=64, pool=pool, class_token=True, mean=(0.4, 0.5, 0.6), std=(0.2, 0.3, 0.25))
    )  # fmt: skip
    export_vit(model, tmp_path)
    images = torch.rand(5, 3, 16, 16)
    (ours,) = session(tmp_path / MODEL).run(None, {"images": images.numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(ours, model(images).numpy(), atol=TOLERANCE)


def test_gpt_cached_steps_give_the_full_forward(tmp_path):
    torch.manual_seed(0)
    model = noisy(GPT(vocab_size=VOCAB, dim=32, num_layers=2, num_heads=4, ffn_dim=64, max_len=64))
    export_gpt(model, tmp_path)
    graph = session(tmp_path / MODEL)
    ids = torch.randint(0, VOCAB, (3, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids).numpy()
    present = [np.zeros((3, 4, 0, 8), np.float32)] * 4  # no past: the prompt's forward
    # a prompt longer than zoo's few-query path, single tokens, then a chunk after a cache
    for start, stop in [(0, 10), (10, 11), (11, 12), (12, 13), (13, 24)]:
        feeds = {"ids": ids[:, start:stop].numpy(), **dict(zip(layer_names("past", 2), present))}
        logits, *present = graph.run(None, feeds)
        np.testing.assert_allclose(logits, full[:, start:stop], atol=TOLERANCE)
    assert present[0].shape == (3, 4, 24, 8)
