"""The BERT commands (the shared verbs over tasks.bert.spec, through the tasks.bert shims) on a
tiny run, and Hugging Face directories both ways."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch
from transformers import BertForPreTraining, BertTokenizerFast, pipeline

from tasks.bert import evaluate, export, fill_mask, train
from tasks.bert.config import BertPretrainingConfig
from tasks.bert.hf import load_bert
from zoo.config import UserError, load_config
from zoo.convert.hf_bert import read_hf_directory
from zoo.models.bert import BertModelConfig, build_bert

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "bert"
TINY = [
    "--model.num_layers=1",
    "--model.dim=32",
    "--model.num_heads=2",
    "--model.ffn_dim=64",
    "--model.max_len=64",
    "--data.synthetic_train=60",
    "--data.synthetic_valid=10",
    "--data.vocab_size=300",
    "--data.batch_size=8",
    "--train.max_steps=4",
    "--train.eval_every=2",
    "--train.log_every=2",
    "--train.progress=false",
    "--train.tensorboard=false",
    "--schedule.warmup_steps=1",
]
TEXTS = ["the town lies on the banks of the [MASK] .", "[MASK] was a composer born in [MASK] ."]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, str]:
    """The tiny run's directory and what `train` printed."""
    out = tmp_path_factory.mktemp("bert") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        train.main([*TINY, f"--train.out_dir={out}"])
    return out, printed.getvalue()


@pytest.fixture(scope="module")
def run_dir(trained) -> Path:
    return trained[0]


@pytest.fixture(scope="module")
def hf_dir(run_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "model"
    export.main([str(run_dir), str(out)])
    return out


def test_train_prints_held_out_accuracy_and_next_commands(trained):
    run_dir, printed = trained
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["step"] == 4 and {"mlm_acc", "nsp_acc", "mlm_ppl"} <= set(summary["metrics"])
    assert (run_dir / "tokenizer.json").is_file()
    metrics = summary["metrics"]
    held_out = next(line for line in printed.splitlines() if line.startswith("held-out:"))
    assert held_out.startswith(
        f"held-out: MLM accuracy {metrics['mlm_acc']:.2f}%  perplexity {metrics['mlm_ppl']:.2f}  "
        f"NSP accuracy {metrics['nsp_acc']:.2f}%"
    )
    assert f"python -m zoo evaluate bert {run_dir} --split valid" in printed
    assert f"python -m zoo export bert {run_dir} --output OUT_DIR" in printed


def test_train_with_too_few_examples_for_a_batch_names_the_batch_size(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # main_guard: one line, exit 2
        train.main([*TINY, "--data.batch_size=100000", f"--train.out_dir={tmp_path / 'run'}"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and "data.batch_size=100000" in error and "max_tokens" not in error


@pytest.fixture
def wikitext_dir(tmp_path) -> Path:
    wikitext = tmp_path / "data" / "wikitext-2"
    wikitext.mkdir(parents=True)
    article = (
        " = Lobster = \n \n The town lies on the river . It was founded in 1820 . "
        "Most families grow wheat . \n \n = = History = = \n \n The river floods . \n"
    )
    for split in ("valid", "test"):
        (wikitext / f"{split}.txt").write_text(article * 3)
    return wikitext.parent


def test_evaluate_scores_held_out_documents_and_wikitext(run_dir, wikitext_dir, capsys):
    held_out = evaluate.main([str(run_dir), "--split=valid"])
    assert held_out["set"] == "held-out (synthetic)" and held_out["documents"] == 10
    assert "held-out (synthetic): MLM accuracy" in capsys.readouterr().out
    assert json.loads((run_dir / "eval_valid.json").read_text()) == held_out
    wikitext = evaluate.main([str(run_dir), f"--data_dir={wikitext_dir}", "--wikitext=wikitext-2"])
    assert wikitext["set"] == "wikitext-2 test" and wikitext["split"] == "test"
    built_in = evaluate.main([str(run_dir), "--split=test", "--limit=3", "--batch_size=2", "--json"])
    assert built_in["set"] == "test (synthetic)" and built_in["examples"] == 3
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == built_in
    for metrics in (held_out, wikitext, built_in):
        assert 0 <= metrics["mlm_acc"] <= 100 and metrics["mlm_ppl"] > 1 and 0 <= metrics["nsp_acc"] <= 100
    with pytest.raises(SystemExit):  # main_guard: one line, exit 2
        evaluate.main([str(run_dir), "--split=train"])


def test_evaluate_reads_a_hugging_face_directory(hf_dir, wikitext_dir, monkeypatch):
    monkeypatch.chdir(wikitext_dir)
    record = evaluate.main([str(hf_dir), f"--data_dir={wikitext_dir}", "--split=valid"])
    assert record["set"] == "wikitext-2 valid" and record["checkpoint"] == str(hf_dir)
    assert not list(wikitext_dir.glob("eval_*.json")) and not list(hf_dir.glob("eval_*.json"))
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)  # CI points it at the real WikiText
    with pytest.raises(SystemExit):  # no WikiText: nothing to score, one line
        evaluate.main([str(hf_dir), "--split=test"])


def test_fill_mask_matches_the_transformers_pipeline(run_dir, hf_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXTS[0] + "\n"))
    fill_mask.main([str(run_dir), "--top_k=3", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert record["input"] == TEXTS[0]
    ours = record["output"]
    theirs = pipeline("fill-mask", model=str(hf_dir), tokenizer=str(hf_dir), top_k=3)(TEXTS[0])
    assert [r["token"] for r in ours] == [r["token"] for r in theirs]
    assert [r["score"] for r in ours] == pytest.approx([r["score"] for r in theirs], abs=1e-5)
    assert [r["sequence"] for r in ours] == [r["sequence"] for r in theirs]
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXTS[0] + "\n"))
    fill_mask.main([str(hf_dir), "--top_k=3", "--json"])  # the exported directory answers the same
    again = json.loads(capsys.readouterr().out)["output"]
    assert [r["token"] for r in again] == [r["token"] for r in ours]
    assert [r["score"] for r in again] == pytest.approx([r["score"] for r in ours], abs=1e-5)
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXTS[1] + "\n"))
    fill_mask.main([str(run_dir), "--top_k=2"])
    assert "[MASK] 2:" in capsys.readouterr().out


def test_fill_mask_keeps_the_other_masks_as_the_pipeline_does(run_dir, hf_dir, monkeypatch, capsys):
    # Two masks: one list per [MASK], and each sequence keeps the other [MASK] (the pipeline then
    # decodes with the special tokens, [CLS] and [SEP] included).
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXTS[1] + "\n"))
    fill_mask.main([str(run_dir), "--top_k=2", "--json"])
    ours = json.loads(capsys.readouterr().out)["output"]
    theirs = pipeline("fill-mask", model=str(hf_dir), tokenizer=str(hf_dir), top_k=2)(TEXTS[1])
    assert len(ours) == len(theirs) == 2
    for mine, pipelines in zip(ours, theirs):
        assert [r["token"] for r in mine] == [r["token"] for r in pipelines]
        assert [r["score"] for r in mine] == pytest.approx([r["score"] for r in pipelines], abs=1e-5)
        assert [r["sequence"] for r in mine] == [r["sequence"] for r in pipelines]
        assert all(r["sequence"].count("[MASK]") == 1 for r in mine)
    monkeypatch.setattr("sys.stdin", io.StringIO("no mask here\n"))
    with pytest.raises(SystemExit):  # main_guard: one line, exit 2
        fill_mask.main([str(run_dir)])


def test_exported_directory_loads_in_transformers_with_the_same_logits_and_ids(run_dir, hf_dir):
    ours = load_bert(str(run_dir))
    hf = BertForPreTraining.from_pretrained(hf_dir, attn_implementation="sdpa").eval()
    tokenizer = BertTokenizerFast.from_pretrained(hf_dir)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    assert batch["input_ids"][0, 1:-1].tolist()[
        : len(ours.tokenizer.encode(TEXTS[0]))
    ] == ours.tokenizer.encode(TEXTS[0])
    mask = batch["attention_mask"].bool()
    with torch.no_grad():
        expected = ours.model(batch["input_ids"], batch["token_type_ids"], mask)
        got = hf(**batch)
    torch.testing.assert_close(got.prediction_logits[mask], expected.mlm[mask], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.seq_relationship_logits, expected.nsp, atol=1e-5, rtol=1e-5)
    again = read_hf_directory(hf_dir)  # and back into zoo
    for name, value in ours.model.state_dict().items():
        torch.testing.assert_close(again.model.state_dict()[name], value, rtol=0, atol=0)


def test_export_refuses_an_existing_directory_unless_forced(run_dir, tmp_path, capsys):
    out = tmp_path / "hf"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(SystemExit):  # one line, exit 2, nothing written
        export.main([str(run_dir), f"--output={out}"])
    assert "pass --force" in capsys.readouterr().err and (out / "old.txt").is_file()
    export.main([str(run_dir), f"--output={out}", "--format=hf", "--force"])
    assert not (out / "old.txt").exists() and (out / "model.safetensors").is_file()


@pytest.mark.parametrize("safe", [True, False])
def test_a_transformers_directory_loads_from_safetensors_or_bin(hf_dir, tmp_path, safe):
    hf = BertForPreTraining.from_pretrained(hf_dir).eval()
    hf.save_pretrained(tmp_path, safe_serialization=safe)
    BertTokenizerFast.from_pretrained(hf_dir).save_pretrained(tmp_path)
    if not safe:  # transformers 5 writes safetensors anyway: make the .bin case by hand
        (tmp_path / "model.safetensors").unlink(missing_ok=True)
        torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    loaded = read_hf_directory(tmp_path)
    ids = torch.tensor([[2, 50, 60, 3, 70, 3]])
    with torch.no_grad():
        expected = hf(input_ids=ids)
        got = loaded.model(ids)
    torch.testing.assert_close(got.mlm, expected.prediction_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.nsp, expected.seq_relationship_logits, atol=1e-5, rtol=1e-5)


def test_a_checkpoint_without_the_heads_is_refused_by_name(hf_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((hf_dir / name).read_bytes())
    state = {
        k: v for k, v in load_file(str(hf_dir / "model.safetensors")).items() if not k.startswith("cls.")
    }
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(UserError, match="missing keys: mlm_head"):
        read_hf_directory(tmp_path)


def test_default_recipe_equals_the_built_in_defaults():
    """An installed package has no configs/ folder: its defaults must be the same recipe."""
    assert load_config(BertPretrainingConfig, CONFIGS / "default.yaml") == BertPretrainingConfig()


@pytest.mark.parametrize(
    "recipe, parameters", [("bert_base", 110e6), ("bert_tiny", 1.55e6), ("bert_mini", 7.63e6)]
)
def test_recipes_have_their_published_sizes(recipe, parameters):
    cfg = load_config(BertPretrainingConfig, CONFIGS / f"{recipe}.yaml")
    assert cfg.data.source == "wikiextractor" and cfg.data.valid == ["wiki_29"]
    with torch.device("meta"):
        model = build_bert(cfg.model, cfg.data.vocab_size, 0)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(parameters, rel=0.02)
    assert isinstance(cfg.model, BertModelConfig)


def test_a_hub_name_goes_through_snapshot_download(hf_dir, monkeypatch):
    """Offline, the hub is replaced by the local export; the call is the real one otherwise."""
    asked = {}

    def snapshot_download(repo_id, allow_patterns):
        asked.update(repo_id=repo_id, allow_patterns=allow_patterns)
        return str(hf_dir)

    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)
    monkeypatch.setattr("zoo.convert.hub.hub_offline", lambda: False)  # as if the hub answered
    loaded = load_bert("someone/tiny-bert")
    assert asked["repo_id"] == "someone/tiny-bert" and "vocab.txt" in asked["allow_patterns"]
    assert loaded.source == hf_dir and loaded.recipe is None


def test_attention_maps_of_a_pair(run_dir, hf_dir, tmp_path):
    from tasks.bert import attention
    from tasks.bert.inference import attention_weights, pair_inputs

    loaded = load_bert(str(run_dir))
    ids, types, tokens = pair_inputs(loaded, "the town lies on the river .", "it floods .")
    weights = attention_weights(loaded, ids, types)
    assert weights.shape == (1, 2, len(tokens), len(tokens)) and tokens[0] == "[CLS]"
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(1, 2, len(tokens)))
    pair = tmp_path / "pair.txt"
    pair.write_text("the town lies on the river .\tit floods .\n")
    for run in (run_dir, hf_dir):  # a run, and a Hugging Face directory
        out = attention.main([str(run), f"--input={pair}", f"--output={tmp_path / 'a.png'}"])
        assert out.stat().st_size > 1000
        (tmp_path / "a.png").unlink()
