"""Generation on the static KV cache: the same ids as the growing cache, and one compiled graph
for every one-token step."""

from __future__ import annotations

import copy
from dataclasses import asdict

import pytest
import torch
import torch._dynamo as dynamo

from tests.zoo.decode.test_lm_generate import CONFIGS, eos_choices, random_gpt, random_prompts, two_chars
from zoo.blocks import linear as linear_module
from zoo.blocks.linear import backend
from zoo.config import Invalid
from zoo.decode import GenerationConfig, generate, lm_static
from zoo.decode.lm_generate import static_length as lm_static_length
from zoo.quantize import quantize_int8

STATIC = {"cache_implementation": "static"}


def eager_step(model, device, step=lm_static.static_step):
    """lm_static.compiled_step's CPU compile on dynamo's eager backend: it traces as inductor
    would (rows marked dynamic included), without its code generation (minutes on this CPU)."""
    return torch.compile(step, fullgraph=True, dynamic=None, backend="eager")


@pytest.mark.parametrize("name", CONFIGS)
def test_greedy_on_the_static_cache_equals_the_growing_cache(name):
    """Left-padded prompts of different lengths, rows ending early at EOS (they stay in the
    static batch) and rows stopped by the context's end."""
    model = random_gpt(CONFIGS[name])
    prompts = random_prompts((5, 2, 8, 1, 44))
    eos = eos_choices(model, prompts, 6)["emitted"]
    for config in (dict(max_new_tokens=6, eos_id=eos), dict(max_new_tokens=9)):
        dynamic = generate(model, prompts, GenerationConfig(**config))
        assert generate(model, prompts, GenerationConfig(**config, **STATIC)) == dynamic
    assert [len(row) for row in dynamic] == [9, 9, 9, 9, 4]  # the last row meets max_len 48


def test_the_static_cache_holds_the_batch_rounded_up_or_the_length_asked(monkeypatch):
    """By default the prompts' width plus the new tokens, rounded up to a power of two (the
    context would make every step attend over it all); a length given is kept, and one too short
    for the batch is refused. Any length gives the growing cache's ids."""
    assert [lm_static_length(n) for n in (1, 16, 17, 64, 65, 1000)] == [16, 16, 32, 64, 128, 1024]
    model = random_gpt()
    prompts = random_prompts((5, 2, 8))
    lengths = []
    real = lm_static.StaticLMState.__init__

    def spy(self, *args, length, **kwargs):
        lengths.append(length)
        real(self, *args, length=length, **kwargs)

    monkeypatch.setattr(lm_static.StaticLMState, "__init__", spy)
    config = dict(max_new_tokens=9)
    dynamic = generate(model, prompts, GenerationConfig(**config))
    assert generate(model, prompts, GenerationConfig(**config, **STATIC)) == dynamic
    assert generate(model, prompts, GenerationConfig(**config, **STATIC, max_cache_len=17)) == dynamic
    assert lengths == [32, 17]  # 8 + 9 columns
    with pytest.raises(ValueError, match="max_cache_len 16 cannot hold the prompts' 8 columns and 9 new"):
        generate(model, prompts, GenerationConfig(**config, **STATIC, max_cache_len=16))


def test_sampling_on_the_static_cache_draws_as_the_growing_cache():
    """No row ends early, so both batches keep every row and draw the same stream."""
    model = random_gpt()
    config = dict(do_sample=True, top_k=10, max_new_tokens=7, min_new_tokens=7, seed=3)
    prompts = random_prompts()
    assert generate(model, prompts, GenerationConfig(**config, **STATIC)) == generate(
        model, prompts, GenerationConfig(**config)
    )


def test_compiled_steps_trace_as_one_graph_without_recompiling(monkeypatch):
    """fullgraph: a graph break would raise; error_on_recompile: a step whose shapes or guards
    changed would raise (on dynamo's eager backend: `eager_step`)."""

    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    dynamo.reset()
    model = random_gpt()
    for prompts in (random_prompts(), random_prompts((6,))):  # one row: its views look contiguous
        expected = generate(model, prompts, GenerationConfig(max_new_tokens=8))
        dynamo.reset()
        with dynamo.config.patch(error_on_recompile=True):
            compiled = generate(model, prompts, GenerationConfig(max_new_tokens=8, compile=True, **STATIC))
        assert compiled == expected
    dynamo.reset()


def test_one_row_compiled_cpu_steps_leave_the_weights_as_the_model_holds_them(monkeypatch, request):
    """A compiled CPU step packs the weights for inductor's own kernels (zoo.decode.lm_static), so
    one row's eager layouts (zoo.blocks.linear.single_row_weights: split products, column-major
    weights) stay out of it: no product split, no weight moved, one graph, the same ids."""
    monkeypatch.setenv("ZOO_CPU_LINEAR", "onednn")
    monkeypatch.setattr(linear_module, "cache_bytes", lambda: 0)
    backend.cache_clear()
    request.addfinalizer(backend.cache_clear)
    split, real_split = [], linear_module.split_product
    monkeypatch.setattr(linear_module, "split_product", lambda *a: split.append(1) or real_split(*a))
    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    model, prompts = random_gpt(), random_prompts((6,))
    weights = [(p, p.data_ptr(), p.stride()) for p in model.parameters()]
    moved = []
    config = GenerationConfig(max_new_tokens=8, compile=True, **STATIC)
    dynamo.reset()
    with dynamo.config.patch(error_on_recompile=True):
        compiled = generate(
            model,
            prompts,
            config,
            on_token=lambda _: moved.extend(w for w in weights if w[1:] != (w[0].data_ptr(), w[0].stride())),
        )
    dynamo.reset()
    assert not split and not moved
    assert compiled == generate(model, prompts, GenerationConfig(max_new_tokens=8))
    assert split  # where eager decoding splits them


def test_one_cpu_graph_serves_every_batch_of_two_or_more_rows(monkeypatch):
    """On the CPU the rows of a batch are traced as a symbol from two rows on
    (zoo.decode.lm_static._tracing), so batches of 3 and 5 rows share one graph: a recompile
    would raise. The ids are the growing cache's."""
    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    model, config = random_gpt(), GenerationConfig(max_new_tokens=8, compile=True, **STATIC)
    batches = [random_prompts((5, 2, 8)), random_prompts((3, 7, 2, 5, 4), seed=2)]
    expected = [generate(model, prompts, GenerationConfig(max_new_tokens=8)) for prompts in batches]
    dynamo.reset()
    got = [generate(model, batches[0], config)]
    with dynamo.config.patch(error_on_recompile=True):
        got.append(generate(model, batches[1], config))
    dynamo.reset()
    assert got == expected


def test_graphs_of_two_batch_shapes_each_serve_their_own(monkeypatch):
    """After a state's first compiled step only the guards that tell cached graphs apart are
    checked: with a graph for four rows and one for one row cached, each call still runs its
    own (a wrong one would fail on the shapes or give other ids)."""

    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    dynamo.reset()
    model, config = random_gpt(), GenerationConfig(max_new_tokens=8, compile=True, **STATIC)
    batches = [random_prompts(), random_prompts((6,)), random_prompts((3, 7, 2, 5), seed=2)]
    expected = [generate(model, prompts, GenerationConfig(max_new_tokens=8)) for prompts in batches]
    assert [generate(model, prompts, config) for prompts in batches] == expected
    dynamo.reset()


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        (dict(cache_implementation="paged"), "cache_implementation"),
        (dict(cache_implementation="static", num_beams=2), "cache_implementation"),
        (dict(compile=True), "compile"),
        (dict(cache_implementation="static", max_cache_len=-1), "max_cache_len"),
        (dict(max_cache_len=64), "max_cache_len"),
    ],
)
def test_static_settings_are_checked(settings, key):
    with pytest.raises(Invalid) as error:
        GenerationConfig(**settings).check()
    assert error.value.key == key


def test_a_cpu_step_frozen_on_some_weights_never_serves_others():
    """On the CPU the compiled step folds the weights into its graph (inductor's freezing): a
    model whose weights changed in place (as an optimizer step changes them) and another model
    of the same shapes each get ids from their own weights, never from the graph frozen first."""
    dynamo.reset()
    config = GenerationConfig(max_new_tokens=6, compile=True, **STATIC)
    prompts = random_prompts((6,))
    model, other = random_gpt(), random_gpt()
    with torch.no_grad():
        for param in other.parameters():
            param.add_(torch.randn_like(param))
    seen = []
    for changed in (False, True):
        if changed:
            with torch.no_grad():
                for param in model.parameters():
                    param.mul_(-1.5)
        expected = generate(model, prompts, GenerationConfig(max_new_tokens=6))
        assert generate(model, prompts, config) == expected
        seen.append(expected)
    expected = generate(other, prompts, GenerationConfig(max_new_tokens=6))
    assert generate(other, prompts, config) == expected
    dynamo.reset()
    assert seen[0] != seen[1] != expected  # each step had other ids to give


@pytest.mark.parametrize("compiled", [False, True])
def test_cpu_steps_read_only_the_columns_written(compiled, monkeypatch):
    """The buffers' columns past the prompts are NaN until a step writes them: attention over the
    whole buffer, however masked, would carry the NaN (0 x NaN) into every row's ids."""
    real = lm_static.StaticCausalCache.from_prefill.__func__

    def poisoned(cls, cache, prompt_real, length):
        static = real(cls, cache, prompt_real, length)
        for layer in static.layers:
            for buffer in (layer.keys, layer.values):
                buffer[:, :, cache.offset :] = float("nan")
        return static

    monkeypatch.setattr(lm_static.StaticCausalCache, "from_prefill", classmethod(poisoned))
    if compiled:
        monkeypatch.setattr(lm_static, "compiled_step", eager_step)
        dynamo.reset()
    model = random_gpt()
    prompts = random_prompts((5, 2, 8))
    expected = generate(model, prompts, GenerationConfig(max_new_tokens=8))
    config = GenerationConfig(max_new_tokens=8, compile=compiled, **STATIC)
    assert generate(model, prompts, config) == expected
    dynamo.reset()


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("steps", [2, 3])
def test_several_steps_a_call_give_the_growing_caches_ids(steps, compiled, monkeypatch):
    """Rows ending at EOS inside a call, min_new_tokens' ban on EOS lifted inside one, limits
    that are no multiple of the steps, a row stopped by the context's end (max_len 48), stop
    strings completed inside a call, and one prompt streamed: the ids of one step at a time on
    the growing cache, traced as one graph (dynamo's eager backend) that never recompiles."""
    if compiled:
        monkeypatch.setattr(lm_static, "compiled_step", eager_step)
        dynamo.reset()
    model = random_gpt()
    prompts = random_prompts((5, 2, 8, 1, 44))
    eos = eos_choices(model, prompts, 6)["emitted"]
    free = generate(model, prompts, GenerationConfig(max_new_tokens=12))
    stop = two_chars(free[1])[7:10]  # across two ids
    several = {**STATIC, "steps_per_call": steps, "compile": compiled}
    for config in (
        dict(max_new_tokens=7, eos_id=eos),
        dict(max_new_tokens=8, eos_id=eos, min_new_tokens=4),
        dict(max_new_tokens=12, stop_strings=[stop]),
    ):
        expected = generate(model, prompts, GenerationConfig(**config), decode=two_chars)
        with dynamo.config.patch(error_on_recompile=compiled):
            got = generate(model, prompts, GenerationConfig(**config, **several), decode=two_chars)
        assert got == expected
    assert [len(row) for row in expected] != [12] * 5  # the stop string ended some rows early
    streamed: list[int] = []
    config = dict(max_new_tokens=8, eos_id=eos)
    (out,) = generate(model, prompts[:1], GenerationConfig(**config, **several), on_token=streamed.append)
    assert streamed == out == generate(model, prompts[:1], GenerationConfig(**config))[0]
    assert len(out) < 8  # it ended at EOS
    dynamo.reset()


def test_int8_models_run_four_compiled_cpu_steps_a_call_of_the_same_ids(monkeypatch):
    """By default only where the compiled CPU step multiplies no float weight (zoo.quantize makes
    every product int8), only for greedy search without processors that read the sequences, and
    always as asked. Four steps a call choose what one step a call chooses (both traced alike)."""
    monkeypatch.setattr(lm_static, "compiled_step", eager_step)
    model = random_gpt()
    int8 = quantize_int8(copy.deepcopy(model))
    cpu, compiled = torch.device("cpu"), GenerationConfig(compile=True, **STATIC)
    assert lm_static.steps_per_call(int8, compiled, cpu) == 4
    assert lm_static.steps_per_call(model, compiled, cpu) == 1
    for other in (dict(compile=False), dict(do_sample=True), dict(repetition_penalty=1.2)):
        assert lm_static.steps_per_call(int8, GenerationConfig(**{**asdict(compiled), **other}), cpu) == 1
    assert lm_static.steps_per_call(model, GenerationConfig(steps_per_call=3, **STATIC), cpu) == 3
    prompts = random_prompts((5, 2, 8))
    dynamo.reset()
    config = dict(max_new_tokens=9, compile=True, **STATIC)
    one = generate(int8, prompts, GenerationConfig(**config, steps_per_call=1))
    four = generate(int8, prompts, GenerationConfig(**config))
    dynamo.reset()
    assert four == one and [len(row) for row in four] == [9, 9, 9]


def test_the_static_cache_holds_a_calls_last_steps(monkeypatch):
    """A call's last steps may run past the longest row's end: the cache has columns for them."""
    model, prompts = random_gpt(), random_prompts((5, 2, 8))
    config = dict(max_new_tokens=9, steps_per_call=4, **STATIC)
    expected = generate(model, prompts, GenerationConfig(max_new_tokens=9))
    assert generate(model, prompts, GenerationConfig(**config, max_cache_len=20)) == expected
    with pytest.raises(ValueError, match="cannot hold the prompts' 8 columns and 12 new .9 tokens, 4 steps"):
        generate(model, prompts, GenerationConfig(**config, max_cache_len=19))


@pytest.mark.parametrize(
    "settings",
    [
        dict(steps_per_call=-1),
        dict(steps_per_call=2),
        dict(steps_per_call=2, do_sample=True, **STATIC),
        dict(steps_per_call=2, repetition_penalty=1.3, **STATIC),
        dict(steps_per_call=2, no_repeat_ngram_size=2, **STATIC),
    ],
)
def test_several_steps_a_call_are_greedy_on_the_static_cache(settings):
    with pytest.raises(Invalid) as error:
        GenerationConfig(**settings).check()
    assert error.value.key == "steps_per_call"
