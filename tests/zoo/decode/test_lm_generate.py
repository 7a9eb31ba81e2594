"""zoo.decode.generate (decoder-only generation): Hugging Face `generate` token for token
(greedy, beam search, the processors, seeded sampling), the KV cache against re-running the
prefix, batching, stop strings, streaming, the context's end."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2LMHeadModel

from zoo.blocks import linear as linear_module
from zoo.blocks.linear import backend
from zoo.config import Invalid
from zoo.convert.hf_gpt2 import hf_model_of
from zoo.decode import GenerationConfig, generate
from zoo.models.gpt import GPT, GPTModelConfig, build_gpt

VOCAB = 41
PAD = 0
CONFIGS = {
    "2 layers": GPTModelConfig(num_layers=2, dim=32, num_heads=4, max_len=48),
    "1 layer 1 head relu": GPTModelConfig(num_layers=1, dim=24, num_heads=1, max_len=48, activation="relu"),
    "3 layers ffn_dim gelu": GPTModelConfig(
        num_layers=3, dim=48, num_heads=3, ffn_dim=40, max_len=48, activation="gelu"
    ),
}


def random_gpt(cfg: GPTModelConfig = CONFIGS["2 layers"], seed: int = 0) -> GPT:
    """A GPT with noise on every weight, so that its next-token choices vary (GPT-2's initial
    weights make nearly uniform ones), in eval mode."""
    torch.manual_seed(seed)
    model = build_gpt(cfg, VOCAB)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.3)
    return model.eval()


def random_prompts(lengths: tuple[int, ...] = (5, 2, 8, 1), seed: int = 1) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=generator).tolist() for n in lengths]


def hf_generate(
    hf: GPT2LMHeadModel, prompts: list[list[int]], *, pad: int = PAD, **kwargs
) -> list[list[int]]:
    """Hugging Face's new ids for prompts left-padded with `pad` (attention_mask 0 there)."""
    width = max(map(len, prompts))
    ids = torch.full((len(prompts), width), pad)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=mask, pad_token_id=pad, **kwargs)
    return out[:, width:].tolist()


def assert_same(ours: list[list[int]], theirs: list[list[int]], eos: int, pad: int = PAD) -> None:
    """Each of Hugging Face's rows is ours, then only padding: it keeps ended rows in the batch
    and fills them (greedy: with pad_token_id; beam search: `pad_token_id or eos_token_id`)."""
    assert len(ours) == len(theirs)
    for row, (mine, hf_row) in enumerate(zip(ours, theirs)):
        assert hf_row[: len(mine)] == mine, f"row {row}: {mine} vs Hugging Face's {hf_row}"
        assert set(hf_row[len(mine) :]) <= {pad, eos}, f"row {row}: {mine} vs Hugging Face's {hf_row}"


def eos_choices(model: GPT, prompts: list[list[int]], max_new_tokens: int) -> dict[str, int]:
    """An id greedy search emits (the first prompt's third new id: its row ends there or before)
    and one it never emits."""
    free = generate(model, prompts, GenerationConfig(max_new_tokens=max_new_tokens))
    seen = {token for row in free for token in row}
    return {"emitted": free[0][2], "never": min(set(range(VOCAB)) - seen)}


@pytest.mark.parametrize("name", CONFIGS)
def test_greedy_equals_hugging_face(name):
    model, prompts = random_gpt(CONFIGS[name]), random_prompts()
    hf = hf_model_of(model)
    for eos in eos_choices(model, prompts, 12).values():
        ours = generate(model, prompts, GenerationConfig(max_new_tokens=12, eos_id=eos, pad_id=PAD))
        assert_same(ours, hf_generate(hf, prompts, max_new_tokens=12, do_sample=False, eos_token_id=eos), eos)


@pytest.mark.parametrize("num_beams", [2, 3, 4])
@pytest.mark.parametrize("name", CONFIGS)
def test_beam_search_equals_hugging_face(name, num_beams):
    model, prompts = random_gpt(CONFIGS[name]), random_prompts()
    hf = hf_model_of(model)
    for eos in eos_choices(model, prompts, 10).values():
        for length_penalty in (1.0, 0.6, 2.0):
            for early_stopping in (False, True, "never"):
                settings = dict(
                    num_beams=num_beams, length_penalty=length_penalty, early_stopping=early_stopping
                )
                config = GenerationConfig(max_new_tokens=10, eos_id=eos, pad_id=PAD, **settings)
                theirs = hf_generate(
                    hf, prompts, max_new_tokens=10, do_sample=False, eos_token_id=eos, **settings
                )
                assert_same(generate(model, prompts, config), theirs, eos)


PROCESSORS = {
    "repetition_penalty 1.3": dict(repetition_penalty=1.3),
    "repetition_penalty 0.7": dict(repetition_penalty=0.7),
    "no_repeat_ngram_size 2": dict(no_repeat_ngram_size=2),
    "no_repeat_ngram_size 3": dict(no_repeat_ngram_size=3),
    "min_new_tokens 6": dict(min_new_tokens=6),
    "all three": dict(repetition_penalty=1.2, no_repeat_ngram_size=2, min_new_tokens=4),
}


@pytest.mark.parametrize("num_beams", [1, 3])
@pytest.mark.parametrize("processor", PROCESSORS)
def test_processors_equal_hugging_face(processor, num_beams):
    """Padding with EOS, as GPT-2 does: Hugging Face's n-gram ban reads the padding as ids (ours
    does not), which shows only where a row holds the padding id; a row ends at EOS."""
    model, prompts = random_gpt(), random_prompts()
    hf = hf_model_of(model)
    eos = eos_choices(model, prompts, 12)["emitted"]
    settings = dict(num_beams=num_beams, **PROCESSORS[processor])
    ours = generate(model, prompts, GenerationConfig(max_new_tokens=12, eos_id=eos, pad_id=eos, **settings))
    theirs = hf_generate(
        hf, prompts, pad=eos, max_new_tokens=12, do_sample=False, eos_token_id=eos, **settings
    )
    assert_same(ours, theirs, eos, pad=eos)


def test_min_new_tokens_forbids_an_early_eos():
    model, prompts = random_gpt(), random_prompts()
    eos = eos_choices(model, prompts, 12)["emitted"]
    free = generate(model, prompts, GenerationConfig(max_new_tokens=12, eos_id=eos))
    assert len(free[0]) <= 3  # ended by EOS by the third id
    held = generate(model, prompts, GenerationConfig(max_new_tokens=12, eos_id=eos, min_new_tokens=6))
    assert all(eos not in row[:6] for row in held)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_cached_equals_uncached(num_beams):
    """The KV cache gives the ids of re-running each whole sequence at every step, with left
    padding and rows ending early."""
    model, prompts = random_gpt(), random_prompts()
    eos = eos_choices(model, prompts, 12)["emitted"]
    config = GenerationConfig(max_new_tokens=12, eos_id=eos, num_beams=num_beams, repetition_penalty=1.1)
    cached = generate(model, prompts, config)
    assert cached == generate(model, prompts, config, use_cache=False)
    assert any(len(row) < 12 for row in cached)  # some row ended early


def test_sampling_cached_equals_uncached():
    model, prompts = random_gpt(), random_prompts()
    config = GenerationConfig(max_new_tokens=10, do_sample=True, top_k=0, temperature=1.5, seed=3)
    assert generate(model, prompts, config) == generate(model, prompts, config, use_cache=False)


@pytest.mark.parametrize("num_beams", [1, 2])
def test_batched_equals_alone_and_ended_rows_stay_ended(num_beams):
    model, prompts = random_gpt(), random_prompts()
    eos = eos_choices(model, prompts, 12)["emitted"]
    config = GenerationConfig(max_new_tokens=12, eos_id=eos, num_beams=num_beams)
    together = generate(model, prompts, config)
    assert together == [generate(model, [prompt], config)[0] for prompt in prompts]
    ended = [row for row in together if len(row) < 12]
    assert ended and all(row[-1] == eos and eos not in row[:-1] for row in ended)
    assert any(len(row) == 12 for row in together)  # others went on after a row ended


def test_one_row_steps_over_column_major_weights_and_gives_them_back(monkeypatch, request):
    """zoo.blocks.linear.single_row_weights on a model that fits the cache, as the state applies
    it: column-major from the first step through the cache while a single row is left, then the
    very row-major tensors again."""
    monkeypatch.setenv("ZOO_CPU_LINEAR", "onednn")
    backend.cache_clear()
    request.addfinalizer(backend.cache_clear)  # the backend the environment chooses, after
    model, (prompt, other) = random_gpt(), random_prompts((4, 6))
    weight = model.output_weight  # the token embeddings, (V, D)
    address, values = weight.data_ptr(), weight.detach().clone()
    strides: list[tuple[int, ...]] = []
    config = GenerationConfig(max_new_tokens=6)
    (alone,) = generate(model, [prompt], config, on_token=lambda _: strides.append(weight.stride()))
    row_major, column_major = weight.shape[1:] + (1,), (1, weight.shape[0])
    assert strides == [row_major] + [column_major] * 5  # the prompt's forward ran row-major
    assert weight.data_ptr() == address and torch.equal(weight, values)
    assert alone == generate(model, [prompt, other], config)[0]  # two rows: row-major throughout


def test_one_row_steps_split_the_products_of_a_model_beyond_the_cache(monkeypatch, request):
    """single_row_weights on a model larger than the cache: the steps after the prompt's split
    their products over the row-major weights; the ids are those of the batch."""
    monkeypatch.setenv("ZOO_CPU_LINEAR", "onednn")
    monkeypatch.setattr(linear_module, "cache_bytes", lambda: 0)
    backend.cache_clear()
    request.addfinalizer(backend.cache_clear)
    model, (prompt, other) = random_gpt(), random_prompts((4, 6))
    weight = next(m.weight for m in model.modules() if isinstance(m, torch.nn.Linear))
    seen: list[tuple[bool, bool]] = []
    config = GenerationConfig(max_new_tokens=6)
    (alone,) = generate(
        model,
        [prompt],
        config,
        on_token=lambda _: seen.append((linear_module._split_contexts > 0, weight.is_contiguous())),
    )
    assert seen == [(False, True)] + [(True, True)] * 5 and not linear_module._split_contexts
    assert alone == generate(model, [prompt, other], config)[0]


def test_sampling_is_seeded_and_top_k_one_is_greedy():
    model, prompts = random_gpt(), random_prompts()

    def sample(**kwargs) -> list[list[int]]:
        return generate(model, prompts, GenerationConfig(max_new_tokens=10, do_sample=True, **kwargs))

    assert sample(seed=1, top_k=0) == sample(seed=1, top_k=0)
    assert sample(seed=1, top_k=0) != sample(seed=2, top_k=0)
    assert sample(seed=4, top_k=1) == generate(model, prompts, GenerationConfig(max_new_tokens=10))


@pytest.mark.parametrize(
    "warpers", [dict(top_k=0), dict(temperature=0.7, top_k=5), dict(top_p=0.8, top_k=0), dict(top_p=0.9)]
)
def test_sampling_equals_hugging_face_with_the_same_seed(warpers):
    """The same draws from the same warped distributions: Hugging Face samples from torch's
    default generator, seeded here as ours is. No row may end early (ours would leave the batch
    and the later draws differ from Hugging Face's, which samples for every row)."""
    model, prompts = random_gpt(), random_prompts()
    hf = hf_model_of(model)
    eos = eos_choices(model, prompts, 8)["never"]
    config = GenerationConfig(max_new_tokens=8, do_sample=True, seed=5, eos_id=eos, pad_id=PAD, **warpers)
    ours = generate(model, prompts, config)
    assert all(len(row) == 8 for row in ours)
    torch.manual_seed(5)
    assert_same(
        ours, hf_generate(hf, prompts, max_new_tokens=8, do_sample=True, eos_token_id=eos, **warpers), eos
    )


def test_several_samples_a_prompt_equal_hugging_face():
    """num_return_sequences samples: each prompt's rows consecutive, drawn as Hugging Face draws them
    (no row ends early: min_new_tokens forbids the EOS in both)."""
    model, prompts = random_gpt(), random_prompts()
    settings = dict(max_new_tokens=8, min_new_tokens=8, do_sample=True, num_return_sequences=3)
    ours = generate(model, prompts, GenerationConfig(seed=5, eos_id=1, pad_id=PAD, **settings))
    assert len(ours) == 3 * len(prompts) and all(len(row) == 8 for row in ours)
    assert len({tuple(row) for row in ours[:3]}) > 1  # independent draws, not one copied
    hf = hf_model_of(model)
    torch.manual_seed(5)
    assert_same(ours, hf_generate(hf, prompts, eos_token_id=1, **settings), eos=1)


@pytest.mark.parametrize("returned", [1, 2, 4])
def test_beam_search_returns_its_best_hypotheses_as_hugging_face(returned):
    model, prompts = random_gpt(), random_prompts()
    hf = hf_model_of(model)
    for eos in eos_choices(model, prompts, 10).values():
        settings = dict(num_beams=4, num_return_sequences=returned, length_penalty=0.6)
        ours = generate(
            model, prompts, GenerationConfig(max_new_tokens=10, eos_id=eos, pad_id=PAD, **settings)
        )
        theirs = hf_generate(hf, prompts, max_new_tokens=10, do_sample=False, eos_token_id=eos, **settings)
        assert_same(ours, theirs, eos)
        best = {**settings, "num_return_sequences": 1}
        assert ours[::returned] == generate(
            model, prompts, GenerationConfig(max_new_tokens=10, eos_id=eos, pad_id=PAD, **best)
        )


def two_chars(ids: list[int]) -> str:
    """A stand-in tokenizer: each id is two letters, so stop strings fall inside ids and across them."""
    return "".join("abcdefg"[i % 7] + "xyz"[i % 3] for i in ids)


def first_hit(ids: list[int], stops: list[str]) -> list[int]:
    """The ids up to the first whose text contains a stop string (all of them when none does)."""
    for end in range(1, len(ids) + 1):
        if any(stop in two_chars(ids[:end]) for stop in stops):
            return ids[:end]
    return ids


@pytest.mark.parametrize("num_beams", [1, 2])
def test_stop_strings_end_a_row_at_the_id_that_completes_them(num_beams):
    model, prompts = random_gpt(), random_prompts()
    free = generate(model, prompts, GenerationConfig(max_new_tokens=12, num_beams=num_beams))
    text = two_chars(free[0])
    for stop in (text[6:8], text[5:8], text[7:8]):  # one id's text, across two ids, one letter
        config = GenerationConfig(max_new_tokens=12, num_beams=num_beams, stop_strings=[stop])
        stopped = generate(model, prompts, config, decode=two_chars)
        if num_beams == 1:  # greedy: each row is its free run cut at the first hit
            assert stopped == [first_hit(row, [stop]) for row in free]
        assert len(stopped[0]) <= 4 and stop in two_chars(stopped[0])
        assert all(stop not in two_chars(row[:-1]) for row in stopped)


def test_stop_strings_need_decode():
    with pytest.raises(ValueError, match="decode"):
        generate(random_gpt(), [[1, 2]], GenerationConfig(stop_strings=["a"]))


@pytest.mark.parametrize("num_beams", [1, 2])
def test_on_token_streams_the_one_prompt(num_beams):
    model, (prompt,) = random_gpt(), random_prompts((4,))
    streamed: list[int] = []
    config = GenerationConfig(max_new_tokens=9, num_beams=num_beams)
    (out,) = generate(model, [prompt], config, on_token=streamed.append)
    assert streamed == out and len(out) == 9
    with pytest.raises(ValueError, match="one sequence"):
        generate(model, random_prompts(), config, on_token=streamed.append)
    several = GenerationConfig(max_new_tokens=9, num_beams=2, num_return_sequences=2)
    with pytest.raises(ValueError, match="one sequence"):
        generate(model, [prompt], several, on_token=streamed.append)


@pytest.mark.parametrize("num_beams", [1, 2])
def test_generation_stops_at_the_context_end(num_beams):
    model = random_gpt()  # max_len 48
    prompts = random_prompts((45, 5, 47))
    out = generate(model, prompts, GenerationConfig(max_new_tokens=10, num_beams=num_beams))
    assert [len(row) for row in out] == [3, 10, 1]
    assert out[0] == generate(model, prompts[:1], GenerationConfig(max_new_tokens=3, num_beams=num_beams))[0]


def test_bad_prompts_are_refused():
    model = random_gpt()
    for prompts, message in [
        (random_prompts((48,)), "leaves room"),
        ([[]], "empty"),
        ([[1, VOCAB]], "vocabulary"),
    ]:
        with pytest.raises(ValueError, match=message):
            generate(model, prompts, GenerationConfig())
    assert generate(model, [], GenerationConfig()) == []


@pytest.mark.parametrize(
    "key, value",
    [
        ("max_new_tokens", 0),
        ("min_new_tokens", -1),
        ("min_new_tokens", 10_000),  # more than max_new_tokens
        ("temperature", 0.0),
        ("top_k", -1),
        ("top_p", 1.5),
        ("repetition_penalty", 0.0),
        ("no_repeat_ngram_size", -2),
        ("num_beams", 0),
        ("early_stopping", "sometimes"),
        ("early_stopping", 1),
        ("eos_id", -1),
        ("pad_id", -3),
        ("stop_strings", [""]),
        ("num_return_sequences", 0),
        ("num_return_sequences", 2),  # greedy search gives one
    ],
)
def test_config_check_names_the_bad_key(key, value):
    with pytest.raises(Invalid) as err:
        GenerationConfig(**{key: value}).check()
    assert err.value.key == key


def test_beam_search_returns_at_most_its_beams():
    with pytest.raises(Invalid) as err:
        GenerationConfig(num_beams=2, num_return_sequences=3).check()
    assert err.value.key == "num_return_sequences"


def test_beam_search_does_not_sample():
    with pytest.raises(Invalid) as err:
        GenerationConfig(num_beams=2, do_sample=True).check()
    assert err.value.key == "num_beams"
