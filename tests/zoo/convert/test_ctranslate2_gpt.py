"""zoo.convert.ctranslate2 for the GPT: over the written directory, CTranslate2's Generator scores
a text as zoo does (so activation, LayerNorm epsilon and positions map) and its greedy search
continues prompts as a plain greedy loop over the zoo model, one prompt at a time or batched;
the engine's options under which they agree; what it does at the end of the position table."""

from __future__ import annotations

import pytest
import torch

from zoo.config import UserError
from zoo.convert.ctranslate2 import write_ctranslate2_gpt
from zoo.data.bpe import EOT as EOT_TEXT
from zoo.data.bpe import ByteBPETokenizer
from zoo.models.gpt import GPT, GPTModelConfig, build_gpt

ctranslate2 = pytest.importorskip("ctranslate2", reason="needs ctranslate2 (pip install ctranslate2)")
EOT = 0
# Byte-level BPE strings as GPT-2's vocab.json holds them (Ġ a space, Ċ a newline).
TOKENS = ["<|endoftext|>", "Ġthe", "Ċ", "Ġ", "!", "é"] + [f"Ġw{i}" for i in range(47)]
CONFIGS = {
    "1 layer tanh gelu wide eps": GPTModelConfig(num_layers=1, dim=32, num_heads=2, max_len=20, norm_eps=0.3),
    "2 layers exact gelu no bias": GPTModelConfig(
        num_layers=2, dim=48, num_heads=4, ffn_dim=40, max_len=20, activation="gelu", bias=False
    ),
    "3 layers relu 1 head": GPTModelConfig(num_layers=3, dim=32, num_heads=1, max_len=20, activation="relu"),
}
PROMPTS = [[1, 7, 9], [EOT], [12, 4, 4, 30, 2, 41]]
NEW = 8


def random_gpt(cfg: GPTModelConfig, vocab_size: int = len(TOKENS)) -> GPT:
    """Weights strong enough that greedy choices are far from ties (norms and biases random too)."""
    torch.manual_seed(0)
    model = build_gpt(cfg, vocab_size).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return model


def exported(cfg: GPTModelConfig, tmp_path, **options) -> tuple[GPT, ctranslate2.Generator]:
    model = random_gpt(cfg)
    write_ctranslate2_gpt(model, TOKENS, tmp_path / "ct2", eot_id=EOT, **options)
    return model, ctranslate2.Generator(str(tmp_path / "ct2"), intra_threads=1)


def zoo_greedy(model: GPT, prompt: list[int], new: int, end: int | None = None) -> list[int]:
    """Up to `new` tokens after `prompt`: the argmax of the last position's logits, appended,
    until `end` (left out)."""
    ids = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(new):
            ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
            if ids[0, -1] == end:
                return ids[0, len(prompt) : -1].tolist()
    return ids[0, len(prompt) :].tolist()


def strings(ids: list[int]) -> list[str]:
    return [TOKENS[i] for i in ids]


@pytest.mark.parametrize("name", CONFIGS)
def test_the_engine_scores_texts_as_zoo(tmp_path, name):
    model, engine = exported(CONFIGS[name], tmp_path)
    for prompt, result in zip(PROMPTS, engine.score_batch([strings(p) for p in PROMPTS])):
        ids = torch.tensor([prompt])
        with torch.no_grad():
            log_probs = model(ids).log_softmax(-1)[0, :-1].gather(1, ids[0, 1:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(result.log_probs), log_probs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", CONFIGS)
def test_greedy_generation_equals_the_zoo_loop_one_prompt_at_a_time(tmp_path, name):
    """One prompt a call: max_length is the number of new tokens; end_token=[] never stops (the
    end-of-text token may come and the search goes on, as in the loop)."""
    model, engine = exported(CONFIGS[name], tmp_path)
    for prompt in PROMPTS:
        expected = zoo_greedy(model, prompt, NEW)
        options = dict(max_length=NEW, sampling_topk=1, end_token=[])
        (result,) = engine.generate_batch([strings(prompt)], include_prompt_in_result=False, **options)
        assert result.sequences_ids[0] == expected
        assert [step.token_id for step in engine.generate_tokens(strings(prompt), **options)] == expected


def test_batched_prompts_of_several_lengths_continue_as_alone(tmp_path):
    """In a batch, the engine runs the shortest prompt's m tokens at once and the rest of each
    prompt as forced steps, which the result holds and max_length counts: a row of n tokens
    returns its prompt past m, then max_length - (n - m) new tokens."""
    model, engine = exported(CONFIGS["2 layers exact gelu no bias"], tmp_path)
    results = engine.generate_batch(
        [strings(p) for p in PROMPTS],
        max_length=NEW,
        sampling_topk=1,
        end_token=[],
        include_prompt_in_result=False,
    )
    shortest = min(map(len, PROMPTS))
    for prompt, result in zip(PROMPTS, results):
        forced = prompt[shortest:]
        assert result.sequences_ids[0] == forced + zoo_greedy(model, prompt, NEW - len(forced))


def test_the_byte_bpe_tokens_are_the_vocabulary_and_end_token_stops(tmp_path):
    """The tokenizer's own token strings (all 256 byte characters among them), prompts that start
    with end-of-text as GPT-2's unconditional samples do, and end_token: the search stops before
    the first token the loop gives three steps in (end-of-text itself is rarely reached)."""
    corpus = ["the cat sat on the mat", "the dog ate the cat's hat", "a mat, a hat, a cat!"] * 20
    tokenizer = ByteBPETokenizer.train(corpus, 300, min_frequency=1)
    model = random_gpt(CONFIGS["1 layer tanh gelu wide eps"], tokenizer.vocab_size)
    tokens = tokenizer.tokens()
    write_ctranslate2_gpt(model, tokens, tmp_path / "ct2", eot_id=tokenizer.eot_id)
    engine = ctranslate2.Generator(str(tmp_path / "ct2"), intra_threads=1)
    for text in [EOT_TEXT, f"{EOT_TEXT}the cat", "a hat!"]:
        prompt = tokenizer.encode(text)
        end = zoo_greedy(model, prompt, NEW)[2]
        (result,) = engine.generate_batch(
            [[tokens[i] for i in prompt]],
            max_length=NEW,
            include_prompt_in_result=False,
            end_token=tokens[end],
        )
        assert result.sequences_ids[0] == zoo_greedy(model, prompt, NEW, end=end)


def test_the_engine_refuses_positions_past_the_table(tmp_path):
    """As zoo's model does past max_len: the exported table is all the engine has."""
    model, engine = exported(CONFIGS["1 layer tanh gelu wide eps"], tmp_path)
    with pytest.raises(RuntimeError, match="No position encodings are defined for positions >= 20"):
        engine.generate_batch(
            [strings(PROMPTS[0])], max_length=30, include_prompt_in_result=False, end_token=[]
        )


def test_a_quantized_export_generates(tmp_path):
    _, engine = exported(CONFIGS["3 layers relu 1 head"], tmp_path, quantization="int8")
    (result,) = engine.generate_batch([strings(PROMPTS[0])], max_length=NEW, include_prompt_in_result=False)
    assert 1 <= len(result.sequences_ids[0]) <= NEW


def test_a_vocabulary_that_does_not_fit_the_model_is_refused(tmp_path):
    model = random_gpt(CONFIGS["3 layers relu 1 head"])
    with pytest.raises(UserError, match="52 tokens .* a model of 53") as error:
        write_ctranslate2_gpt(model, TOKENS[:-1], tmp_path / "ct2", eot_id=EOT)
    assert "\n" not in str(error.value)
