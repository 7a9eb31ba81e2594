"""`python -m zoo export translation RUN --format onnx`: the directory holds the encoder, the
decoder step, config.json and the SentencePiece model, and zoo's greedy search over them under
ONNX Runtime translates the test sentences as the run's own model does, token for token."""

import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from tasks.translation import export
from tasks.translation.config import TranslationConfig
from tasks.translation.spec import TranslationOptions, TranslationSpec
from tasks.translation.task import TranslationTask
from zoo.config import load_config
from zoo.data.special import SPECIAL_IDS
from zoo.decode import greedy_search
from zoo.train import fit, load_trained

pytest.importorskip("onnxscript", reason="needs the onnx extra (pip install 'zoo[onnx]')")
pytest.importorskip("onnxruntime", reason="needs the onnx extra (pip install 'zoo[onnx]')")

from zoo.convert.onnx.runtime import OnnxSeq2Seq  # noqa: E402


def test_onnx_export_translates_as_the_run_does(tmp_path):
    run = tmp_path / "run"
    cfg = load_config(
        TranslationConfig, None,
        [f"train.out_dir={run}", "train.max_steps=3", "train.eval_every=0", "train.progress=false",
         "train.tensorboard=false", "data.synthetic_train=300", "data.synthetic_valid=20",
         "data.synthetic_test=20", "data.vocab_size=120", "model.dim=32", "model.ffn_dim=64",
         "model.num_heads=4", "model.encoder_layers=1", "model.decoder_layers=2", "model.dropout=0.0"],
    )  # fmt: skip
    task = TranslationTask(cfg)
    fit(cfg, task)
    out = export.main(
        [str(run), "--format", "onnx", "--output", str(tmp_path / "onnx"), "--checkpoint", "last"]
    )
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".data")) == [
        "config.json", "decoder_step.onnx", "encoder.onnx", "spm.model"
    ]  # fmt: skip

    translator = TranslationSpec().load(
        [load_trained(run, TranslationConfig, which="last")], TranslationOptions()
    )
    assert (out / "spm.model").read_bytes() == translator.tokenizer.model
    sources = [task.data.split("test").pairs.src.row(i) for i in range(12)]
    src = pad_sequence([torch.tensor([*ids, SPECIAL_IDS.eos]) for ids in sources], batch_first=True)
    limits = dict(special=SPECIAL_IDS, max_len_a=cfg.decode.max_len_a, max_len_b=cfg.decode.max_len_b)
    ours = greedy_search(OnnxSeq2Seq.load(out, threads=1), src, **limits).best()
    assert ours == greedy_search(translator.model, src, **limits).best()
