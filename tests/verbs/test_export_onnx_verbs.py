"""`python -m zoo export TASK RUN --format onnx` for vit, gpt, bert and bert_finetune through the
real command line: a tiny run of each is trained and exported as subprocesses, the files written
beside model.onnx are the run's (class names, tokenizer), and the graph under ONNX Runtime gives
the outputs of the run's own model (the checkpoint the export read, loaded by the task's spec)
on a real input within 1e-4. (Translation: tests/tasks/translation/test_export_onnx.py; the
exporters on random models, every BERT head included: tests/zoo/convert/test_onnx_export.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_every_task import QUIET, TINY, digit_png, zoo
from torch.nn.utils.rnn import pad_sequence

from tasks.bert.finetune import heads
from tasks.bert.finetune.splits import read_split
from tasks.bert.inference import pair_inputs
from zoo.train import load_trained
from zoo.verbs import Loaded
from zoo.verbs.registry import get_spec

pytest.importorskip("onnxscript", reason="needs the onnx extra (pip install 'zoo[onnx]')")
pytest.importorskip("onnxruntime", reason="needs the onnx extra (pip install 'zoo[onnx]')")

from zoo.convert.onnx.export import MODEL, layer_names  # noqa: E402
from zoo.convert.onnx.runtime import session  # noqa: E402

TOLERANCE = 1e-4


def exported(task: str, tmp_path: Path) -> tuple[Loaded, Path]:
    """A tiny run of `task` trained, then exported to ONNX, by the CLI; returns the run's last
    checkpoint (the one exported) loaded as the verbs load it, and the export's directory."""
    run, out = tmp_path / "run", tmp_path / "onnx"
    trained = zoo("train", task, *QUIET, *TINY[task].train, "--train.max_steps=2", "--train.eval_every=0",
                  f"--train.out_dir={run}")  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    written = zoo("export", task, str(run), "--checkpoint=last", "--format=onnx", f"--output={out}")
    assert written.returncode == 0, written.stderr
    spec = get_spec(task)
    return spec.load([load_trained(run, spec.config, which="last")], spec.options()), out


def written_files(out: Path) -> list[str]:
    """The export's files, without the external-weights file torch.onnx writes beside a graph."""
    return sorted(p.name for p in out.iterdir() if not p.name.endswith(".data"))


def test_vit_onnx_export_classifies_as_the_run_does(tmp_path):
    loaded, out = exported("vit", tmp_path)
    assert written_files(out) == ["classes.txt", "model.onnx"]
    assert (out / "classes.txt").read_text().splitlines() == loaded.classes
    images = loaded.read([digit_png(tmp_path / "digit.png")])  # as predict reads an image file
    (logits,) = session(out / MODEL, threads=1).run(None, {"images": images.numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(logits, loaded.model(images).numpy(), atol=TOLERANCE)


def test_gpt_onnx_export_continues_a_prompt_as_the_run_does(tmp_path):
    loaded, out = exported("gpt", tmp_path)
    assert written_files(out) == ["model.onnx", "tokenizer.json"]
    assert (out / "tokenizer.json").read_bytes() == loaded.tokenizer.to_bytes()
    ids = torch.tensor([loaded.tokenizer.encode(TINY["gpt"].sample(tmp_path))])
    attn = loaded.model.blocks.layers[0].self_attn
    past = [np.zeros((1, attn.num_heads, 0, attn.head_dim), np.float32)] * (2 * loaded.model.num_layers)
    names, graph = layer_names("past", loaded.model.num_layers), session(out / MODEL, threads=1)
    # the prompt but its last token, then that token after the present it left: the cache round trip
    first, *present = graph.run(None, {"ids": ids[:, :-1].numpy(), **dict(zip(names, past))})
    last, *_ = graph.run(None, {"ids": ids[:, -1:].numpy(), **dict(zip(names, present))})
    with torch.no_grad():
        full = loaded.model(ids).numpy()
    np.testing.assert_allclose(np.concatenate([first, last], axis=1), full, atol=TOLERANCE)


def test_bert_onnx_export_encodes_as_the_run_does(tmp_path):
    loaded, out = exported("bert", tmp_path)
    assert written_files(out) == ["model.onnx", "tokenizer.json"]
    assert (out / "tokenizer.json").read_bytes() == loaded.tokenizer.to_bytes()
    # a held-out sentence pair (token types 0 and 1) and a shorter sentence padded to it
    text, _, text_b = get_spec("bert").default_input(None)[0].partition("\t")
    rows = [pair_inputs(loaded, text, text_b), pair_inputs(loaded, TINY["bert"].sample(tmp_path))]
    ids = pad_sequence([r[0][0] for r in rows], batch_first=True, padding_value=loaded.tokenizer.pad_id)
    types = pad_sequence([r[1][0] for r in rows], batch_first=True)
    mask = pad_sequence([torch.ones(r[0].shape[1], dtype=torch.bool) for r in rows], batch_first=True)
    assert not mask.all()
    hidden, pooled = session(out / MODEL, threads=1).run(
        None, {"input_ids": ids.numpy(), "token_type_ids": types.numpy(), "attention_mask": mask.numpy()}
    )
    with torch.no_grad():
        expected = loaded.model.encode(ids, types, mask)
        # padding positions skip the feed-forward in zoo's encoder (zoo.blocks.packing): never read
        np.testing.assert_allclose(hidden[mask.numpy()], expected[mask].numpy(), atol=TOLERANCE)
        np.testing.assert_allclose(pooled, loaded.model.pool(expected).numpy(), atol=TOLERANCE)


def test_bert_finetune_onnx_export_classifies_as_the_run_does(tmp_path):
    loaded, out = exported("bert_finetune", tmp_path)
    assert loaded.cfg.head == "classify"
    assert written_files(out) == ["model.onnx", "tokenizer.json"]
    assert (out / "tokenizer.json").read_bytes() == loaded.tokenizer.to_bytes()
    examples = read_split(loaded.cfg, "train")  # the built-in set's sentences, of several lengths
    batch = heads.encode(loaded.cfg, examples, loaded.tokenizer, loaded.encoder.labels).collate(
        range(len(examples))
    )
    assert not batch.attention_mask.all()
    (logits,) = session(out / MODEL, threads=1).run(
        None,
        {"input_ids": batch.input_ids.numpy(), "token_type_ids": batch.token_type_ids.numpy(),
         "attention_mask": batch.attention_mask.numpy()},
    )  # fmt: skip
    with torch.no_grad():
        np.testing.assert_allclose(logits, heads.forward(loaded.model, batch).numpy(), atol=TOLERANCE)
