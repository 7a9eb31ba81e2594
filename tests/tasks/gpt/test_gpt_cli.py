"""The GPT commands (the shared verbs over tasks.gpt.spec) on a tiny run: training learns, evaluate
scores the held-out text and WikiText, generate continues prompts (batched, streamed, cut to the
context), export gives directories that transformers and CTranslate2 load with the same outputs."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
import torch
from transformers import GPT2LMHeadModel, GPT2TokenizerFast

from tasks.gpt import generate, train
from tasks.gpt import spec as spec_module
from tasks.gpt.config import GPTConfig
from tasks.gpt.data import load_texts, token_stream
from tasks.gpt.spec import GPTOptions, GPTSpec
from zoo.config import load_config
from zoo.convert.hf_gpt2 import hf_model_of
from zoo.decode import GenerationConfig
from zoo.decode import generate as zoo_generate
from zoo.plot import plot_self_attention
from zoo.train import load_trained
from zoo.verbs.cli import run_verb

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "gpt"
TINY = [
    "--model.num_layers=2",
    "--model.dim=32",
    "--model.num_heads=2",
    "--model.max_len=32",
    "--data.synthetic_train=80",
    "--data.synthetic_valid=10",
    "--data.vocab_size=300",
    "--data.context=32",
    "--data.batch_size=8",
    "--train.max_steps=6",
    "--train.eval_every=3",
    "--train.log_every=3",
    "--train.progress=false",
    "--train.tensorboard=false",
    "--schedule.warmup_steps=1",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gpt") / "run"
    train.main([*TINY, f"--train.out_dir={out}"])
    return out


def test_the_default_recipe_file_equals_the_schema_defaults():
    assert load_config(GPTConfig, CONFIGS / "default.yaml") == GPTConfig()


def test_train_prints_perplexity_a_sample_and_the_next_commands(tmp_path, capsys):
    out = tmp_path / "run"
    train.main([*TINY, "--train.max_steps=2", f"--train.out_dir={out}"])
    printed = capsys.readouterr().out
    assert "perplexity" in printed and "sample (top-k 50, seed 0): the town of" in printed
    assert "configs/gpt/enwiki.yaml" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["step"] == 2 and {"loss", "ppl"} <= set(summary["metrics"])
    assert (out / "tokenizer.json").is_file()


def test_training_lowers_the_held_out_perplexity(run_dir):
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    ppl = [r["ppl"] for r in records if r.get("split") == "valid"]
    assert len(ppl) == 2 and ppl[-1] < ppl[0]


def test_evaluate_scores_the_held_out_text_per_token_and_byte(run_dir, capsys):
    record = run_verb(GPTSpec(), "evaluate", [str(run_dir), "--split=valid", "--json"])
    assert record["tokens"] > 100 and record["ppl"] > 1.0 and record["bpb"] > 0.0
    assert json.loads((run_dir / "eval_valid.json").read_text())["ppl"] == pytest.approx(record["ppl"])


def test_evaluate_of_one_window_is_the_cross_entropy_of_the_held_out_ids(run_dir):
    """Brute force: the first 20 ids of the held-out split (end-of-text, then its documents) fit
    one window, so the loss is the mean next-id cross-entropy of one forward over them."""
    record = run_verb(GPTSpec(), "evaluate", [str(run_dir), "--split=valid", "--limit=20", "--json"])
    loaded = GPTSpec().load([load_trained(run_dir, GPTConfig)], GPTOptions(run=str(run_dir)))
    stream = token_stream(load_texts(loaded.recipe.data, "valid"), loaded.tokenizer)
    ids = torch.tensor([loaded.tokenizer.eot_id, *stream.tolist()][:20])
    with torch.no_grad():
        logits = loaded.model.eval()(ids[None])[0]
    nll = torch.nn.functional.cross_entropy(logits[:-1].float(), ids[1:])
    assert record["tokens"] == 19
    assert record["loss"] == pytest.approx(nll.item(), rel=1e-5)
    assert record["ppl"] == pytest.approx(nll.exp().item(), rel=1e-5)


def test_evaluate_scores_the_runs_own_split_per_word(run_dir):
    record = run_verb(GPTSpec(), "evaluate", [str(run_dir), "--split=valid", "--json"])
    loaded = GPTSpec().load([load_trained(run_dir, GPTConfig)], GPTOptions(run=str(run_dir)))
    words = sum(len(text.split()) for text in load_texts(loaded.recipe.data, "valid"))
    assert record["words"] == words
    assert record["word_ppl"] == pytest.approx(math.exp(record["loss"] * record["tokens"] / words), rel=1e-6)


def test_evaluate_scores_wikitext_per_word(run_dir, tmp_path):
    wikitext = tmp_path / "wikitext-2"
    wikitext.mkdir()
    article = " = Kalo = \n \n The town lies on the river . It was founded in 1820 @-@ 21 . \n"
    (wikitext / "test.txt").write_text(article * 4)
    record = run_verb(
        GPTSpec(), "evaluate", [str(run_dir), f"--data_dir={tmp_path}", "--wikitext=wikitext-2", "--json"]
    )
    words = 4 * (
        3 + 0 + 15 + 3
    )  # whitespace tokens + one end of line per line (blank ones too), as WikiText counts
    assert record["words"] == words
    assert record["word_ppl"] == pytest.approx(
        torch.tensor(record["loss"] * record["tokens"] / words).exp().item(), rel=1e-6
    )


def test_evaluate_with_a_one_token_window_advances_one_token(run_dir):
    """The default stride (half the window) rounds down to 0 for --context=1; it advances by 1, so
    each token is scored after the one before it alone: one forward of a single id each."""
    record = run_verb(
        GPTSpec(), "evaluate", [str(run_dir), "--split=valid", "--context=1", "--limit=20", "--json"]
    )
    assert (record["context"], record["stride"], record["tokens"]) == (1, 1, 19)
    loaded = GPTSpec().load([load_trained(run_dir, GPTConfig)], GPTOptions(run=str(run_dir)))
    stream = token_stream(load_texts(loaded.recipe.data, "valid"), loaded.tokenizer)
    ids = torch.tensor([loaded.tokenizer.eot_id, *stream.tolist()][:20])
    with torch.no_grad():
        logits = loaded.model.eval()(ids[:-1, None])[:, 0]
    nll = torch.nn.functional.cross_entropy(logits.float(), ids[1:])
    assert record["loss"] == pytest.approx(nll.item(), rel=1e-5)


def test_evaluate_of_a_hugging_face_directory_keeps_no_record(run_dir, tmp_path, monkeypatch):
    """Not even in the current directory when it holds a config.yaml, as a zoo run does."""
    hf_dir = tmp_path / "hf"
    run_verb(GPTSpec(), "export", [str(run_dir), "--format=hf", f"--output={hf_dir}"])
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "test.txt").write_text(" = Kalo = \n \n The town lies on the river . \n" * 3)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "config.yaml").write_text("model: {}\n")
    monkeypatch.chdir(cwd)
    record = run_verb(GPTSpec(), "evaluate", [str(hf_dir), f"--data_dir={tmp_path}", "--wikitext=wikitext-2"])
    assert record["checkpoint"] == str(hf_dir) and record["tokens"] > 10
    assert not list(cwd.glob("eval_*.json")) and not list(hf_dir.glob("eval_*.json"))


def test_generate_batches_prompts_and_equals_each_prompt_alone(run_dir, monkeypatch, capsys):
    prompts = ["The town of", "Kalo", "A ship named"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(prompts) + "\n"))
    together = generate.main([str(run_dir), "--max_new_tokens=8", "--output=/dev/null"])
    alone = []
    for prompt in prompts:
        monkeypatch.setattr("sys.stdin", io.StringIO(prompt + "\n"))
        alone += generate.main([str(run_dir), "--max_new_tokens=8", "--json"])
    assert [t.replace("\\n", "\n") for t in together] == alone
    assert all(text.startswith(prompt) for text, prompt in zip(alone, prompts))
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(prompts) + "\n"))
    static = generate.main([str(run_dir), "--max_new_tokens=8", "--cache_implementation=static", "--json"])
    assert static == alone
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(prompts) + "\n"))
    options = ["--max_new_tokens=8", "--cache_implementation=static", "--steps_per_call=3", "--json"]
    assert generate.main([str(run_dir), *options]) == alone


def test_batch_size_sends_the_prompts_in_batches_in_order(run_dir, monkeypatch):
    prompts = ["The town of", "Kalo", "A ship named", "the river"]
    calls = []

    def spy(model, batch, *args, **kwargs):
        calls.append(len(batch))
        return zoo_generate(model, batch, *args, **kwargs)

    monkeypatch.setattr("tasks.gpt.spec.generate", spy)
    outputs = {}
    for size in (1, 3, 0):
        calls.clear()
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(prompts) + "\n"))
        outputs[size] = generate.main([str(run_dir), "--max_new_tokens=8", f"--batch_size={size}", "--json"])
        assert calls == {1: [1, 1, 1, 1], 3: [3, 1], 0: [4]}[size]
    assert outputs[1] == outputs[3] == outputs[0]  # greedy: a prompt's output is its own
    assert all(text.startswith(prompt) for text, prompt in zip(outputs[1], prompts))


def test_one_prompt_streams_to_the_terminal(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("The town of\n"))
    (text,) = generate.main([str(run_dir), "--max_new_tokens=8", "--do_sample", "--top_k=5", "--seed=3"])
    assert capsys.readouterr().out == text + "\n"


def test_several_continuations_a_prompt_come_in_order(run_dir, monkeypatch, capsys):
    prompts = ["The town of", "the river"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(prompts) + "\n"))
    sampled = generate.main([str(run_dir), "--max_new_tokens=6", "--do_sample", "--num_return_sequences=3"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(
        line.startswith(p) for line, p in zip(lines, [prompts[0]] * 3 + [prompts[1]] * 3)
    )
    assert sampled == ["\n".join(lines[:3]), "\n".join(lines[3:])]
    beam = ["--max_new_tokens=6", "--num_beams=3", "--json"]
    monkeypatch.setattr("sys.stdin", io.StringIO(prompts[0] + "\n"))
    (best,) = generate.main([str(run_dir), *beam])
    monkeypatch.setattr("sys.stdin", io.StringIO(prompts[0] + "\n"))
    (two,) = generate.main([str(run_dir), *beam, "--num_return_sequences=2"])
    assert two[0] == best and len(two) == 2
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["output"] == two


def test_a_prompt_longer_than_the_context_is_cut_from_the_left_with_a_note(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("the town " * 100 + "\n"))
    generate.main([str(run_dir), "--max_new_tokens=4", "--json"])
    err = capsys.readouterr().err
    assert "note: prompt 1 has" in err and "kept its last 28" in err and "more than the context" not in err


def test_more_new_tokens_than_the_context_holds_gets_a_note(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("the town\n"))
    (text,) = generate.main([str(run_dir), "--max_new_tokens=500", "--min_new_tokens=500", "--json"])
    err = capsys.readouterr().err
    assert "note: max_new_tokens 500 is more than the context of 32 holds" in err


def test_export_hf_loads_in_transformers_with_equal_logits(run_dir, tmp_path):
    out = tmp_path / "hf"
    run_verb(GPTSpec(), "export", [str(run_dir), "--format=hf", f"--output={out}"])
    hf = GPT2LMHeadModel.from_pretrained(out).eval()
    tokenizer = GPT2TokenizerFast.from_pretrained(out)
    loaded = GPTSpec().load_foreign(GPTOptions(run=str(out)))
    ids = tokenizer("The town lies on the river", return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(ids), hf(ids).logits, atol=1e-4, rtol=1e-4)
    assert tokenizer.encode("Kalo lies") == loaded.tokenizer.encode("Kalo lies")


def test_export_ctranslate2_generates_as_the_run_does(run_dir, tmp_path):
    """`export --format ctranslate2`: CTranslate2's Generator continues a prompt greedily with the
    run's own greedy ids (the prompt's tokens given as the exported vocabulary's strings)."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    out = tmp_path / "ct2"
    run_verb(GPTSpec(), "export", [str(run_dir), "--format=ctranslate2", f"--output={out}"])
    loaded = GPTSpec().load([load_trained(run_dir, GPTConfig)], GPTOptions(run=str(run_dir)))
    prompt = loaded.tokenizer.encode("The town of")
    config = GenerationConfig(max_new_tokens=8, min_new_tokens=8, eos_id=loaded.tokenizer.eot_id)
    [expected] = zoo_generate(loaded.model, [prompt], config)
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    engine = ctranslate2.Generator(str(out), intra_threads=1)
    [result] = engine.generate_batch([[vocabulary[i] for i in prompt]], max_length=8, min_length=8,
                                     sampling_topk=1, include_prompt_in_result=False)  # fmt: skip
    assert result.sequences_ids[0] == expected


def test_attention_draws_every_layer_and_head(run_dir, tmp_path, monkeypatch):
    """The picture holds the prompt's tokens and every layer's and head's attention weights:
    Hugging Face's GPT-2 with the run's weights returns the same ones (output_attentions)."""
    drawn = {}

    def plot(weights, tokens, output, **kwargs):
        drawn.update(weights=weights, tokens=tokens)
        plot_self_attention(weights, tokens, output, **kwargs)

    monkeypatch.setattr(spec_module, "plot_self_attention", plot)
    out = tmp_path / "attention.png"
    text = "The town of Kalo"
    run_verb(GPTSpec(), "attention", [str(run_dir), f"--output={out}", f"--input={_file(tmp_path, text)}"])
    assert out.stat().st_size > 1000
    loaded = GPTSpec().load([load_trained(run_dir, GPTConfig)], GPTOptions(run=str(run_dir)))
    ids = loaded.tokenizer.encode(text)
    assert "".join(drawn["tokens"]) == text and len(drawn["tokens"]) == len(ids)
    hf = hf_model_of(loaded.model)
    hf.config._attn_implementation = "eager"  # the implementation that returns the weights
    with torch.no_grad():
        expected = torch.cat(
            hf(torch.tensor([ids]), output_attentions=True).attentions
        )  # (layers, heads, T, T)
    torch.testing.assert_close(drawn["weights"], expected, atol=1e-5, rtol=1e-5)


def _file(folder: Path, text: str) -> Path:
    path = folder / "input.txt"
    path.write_text(text + "\n")
    return path
