"""The models' training forwards (the loss included) trace under torch.compile as one graph: a
graph break costs a compiled step its speed (bench/results/gpu.md: each break removed there made
the compiled step faster than eager)."""

from __future__ import annotations

import torch
import torch._dynamo as dynamo

from zoo.models import ModelConfig, build_model
from zoo.models.gpt import GPTModelConfig, build_gpt
from zoo.models.vit import ViT


def one_graph(fn, *args) -> None:
    dynamo.reset()
    explained = dynamo.explain(fn)(*args)
    dynamo.reset()
    assert explained.graph_break_count == 0, [str(r.reason)[:200] for r in explained.break_reasons]
    assert explained.graph_count == 1


def test_the_seq2seq_training_loss_is_one_graph():
    torch.manual_seed(0)
    cfg = ModelConfig(encoder_layers=1, decoder_layers=1, dim=32, num_heads=2, ffn_dim=64)
    model = build_model(cfg, 50, 50, 0).train()
    src, tgt = torch.randint(4, 50, (3, 7)), torch.randint(4, 50, (3, 6))
    src[1, 5:] = tgt[2, 4:] = 0  # padding, which the eager loss drops by a data-dependent index
    one_graph(lambda: model(src, tgt, tgt, smoothing=0.1).loss)


def test_the_gpt_training_loss_is_one_graph():
    torch.manual_seed(0)
    model = build_gpt(GPTModelConfig(num_layers=1, dim=32, num_heads=2, max_len=16), 40).train()
    ids = torch.randint(0, 40, (2, 9))
    targets = ids.roll(-1, 1)
    targets[:, -1] = -100
    one_graph(lambda: model(ids, targets).loss)


def test_the_vit_training_forward_is_one_graph():
    torch.manual_seed(0)
    model = ViT(image_size=16, patch_size=4, in_chans=3, num_classes=5, dim=32, encoder_layers=1, num_heads=2,
                ffn_dim=64, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25)).train()  # fmt: skip
    images, labels = torch.rand(2, 3, 16, 16), torch.tensor([1, 4])
    one_graph(lambda: torch.nn.functional.cross_entropy(model(images), labels, label_smoothing=0.1))
