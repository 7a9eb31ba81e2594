"""zoo.convert.onnx for the translation Transformer: under ONNX Runtime the exported encoder gives
zoo's memory and cross-attention keys/values, the decoder step fed its own present gives zoo's
teacher-forced logits at every position (from an empty past), and zoo's greedy search over the
graphs (zoo.convert.onnx.runtime) gives zoo's ids token for token on a padded batch. The batch
and lengths differ from the export's example inputs, so the axes are dynamic; restricted
attention and the recurrent baseline are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.decode import greedy_search
from zoo.models import ModelConfig, build_model

pytest.importorskip("onnxscript", reason="needs the onnx extra (pip install 'zoo[onnx]')")
pytest.importorskip("onnxruntime", reason="needs the onnx extra (pip install 'zoo[onnx]')")

from zoo.convert.onnx.export import DECODER_STEP, ENCODER, export_translation, layer_names  # noqa: E402
from zoo.convert.onnx.runtime import OnnxSeq2Seq, session  # noqa: E402

VOCAB, LAYERS, TOLERANCE = 40, 2, 1e-4
VARIANTS = {
    "post_norm": {},
    "pre_norm_rms_learned_key_dim_additive": dict(
        pre_norm=True, norm="rms", positions="learned", key_dim=4, share_embeddings=False,
        attention_score="additive",
    ),
}  # fmt: skip


def tiny(**variant) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(encoder_layers=LAYERS, decoder_layers=LAYERS, dim=32, ffn_dim=64, num_heads=4,
                      dropout=0.0, max_len=48, **variant)  # fmt: skip
    model = build_model(cfg, VOCAB, VOCAB, SPECIAL_IDS.pad)
    with torch.no_grad():  # noise on norms and biases too, so a misplaced one shows
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    return model.eval()


@pytest.fixture(scope="module", params=list(VARIANTS))
def exported(request, tmp_path_factory):
    model = tiny(**VARIANTS[request.param])
    directory = tmp_path_factory.mktemp(request.param)
    export_translation(model, directory)
    return model, directory


def padded_sources(lengths: list[int]) -> torch.Tensor:
    """Right-padded sources ending with EOS, of the given lengths (EOS included)."""
    generator = torch.Generator().manual_seed(1)
    src = torch.full((len(lengths), max(lengths)), SPECIAL_IDS.pad)
    for row, length in enumerate(lengths):
        src[row, : length - 1] = torch.randint(
            SPECIAL_IDS.reserved, VOCAB, (length - 1,), generator=generator
        )
        src[row, length - 1] = SPECIAL_IDS.eos
    return src


def test_encoder_gives_zoo_memory_and_cross_keys_values(exported):
    model, directory = exported
    src = padded_sources([9, 4, 7])
    memory, mask, *cross = session(directory / ENCODER).run(None, {"src": src.numpy()})
    with torch.no_grad():
        ref_memory, ref_mask = model.encode(src)
        ref_cross = [kv for layer in model.decoder.layers for kv in layer.cross_attn.context_kv(ref_memory)]
    real = ref_mask[:, 0, 0].numpy()
    np.testing.assert_array_equal(mask, real)
    # padding positions skip the feed-forward in zoo's encoder (zoo.blocks.packing): never read
    np.testing.assert_allclose(memory[real], ref_memory.numpy()[real], atol=TOLERANCE)
    for ours, ref in zip(cross, ref_cross, strict=True):  # (B, H, S, ..) at each row's real positions
        np.testing.assert_allclose(
            np.moveaxis(ours, 2, 1)[real], np.moveaxis(ref.numpy(), 2, 1)[real], atol=TOLERANCE
        )


def test_decoder_steps_give_teacher_forced_logits(exported):
    model, directory = exported
    src = padded_sources([6, 8, 3])
    tgt = torch.cat([torch.full((3, 1), SPECIAL_IDS.bos), padded_sources([7, 7, 7])[:, :6]], dim=1)
    with torch.no_grad():
        full = model.decode(tgt, *model.encode(src))  # (B, T, V)
    _, mask, *cross = session(directory / ENCODER).run(None, {"src": src.numpy()})
    step = session(directory / DECODER_STEP)
    past = [kv[:, :, :0] for kv in cross]  # no step before the first
    for t in range(tgt.shape[1]):
        feeds = {"tokens": tgt[:, t : t + 1].numpy(), "memory_mask": mask}
        feeds |= zip(layer_names("cross", LAYERS), cross)
        feeds |= zip(layer_names("past", LAYERS), past)
        logits, *past = step.run(None, feeds)
        np.testing.assert_allclose(logits, full[:, t].numpy(), atol=TOLERANCE)
    assert past[0].shape[2] == tgt.shape[1]


def test_greedy_search_over_onnx_runtime_gives_zoo_ids(exported):
    model, directory = exported
    src = padded_sources([9, 3, 12, 5, 7, 2])  # rows reach their limits (and leave) at different steps
    kwargs = dict(special=SPECIAL_IDS, max_len_a=1.0, max_len_b=4)
    ours = greedy_search(OnnxSeq2Seq.load(directory, threads=1), src, **kwargs)
    ref = greedy_search(model, src, **kwargs)
    assert ours.best() == ref.best()
    assert len({len(ids) for ids in ref.best()}) > 1  # the batch shrank as rows ended
    torch.testing.assert_close(ours.scores, ref.scores, atol=TOLERANCE, rtol=0)


def test_refuses_what_the_graphs_do_not_represent(tmp_path):
    with pytest.raises(UserError, match="model.window"):
        export_translation(tiny(window=2), tmp_path)
    with pytest.raises(UserError, match="arch rnn"):
        export_translation(tiny(arch="rnn"), tmp_path)
    assert not any(tmp_path.iterdir())
