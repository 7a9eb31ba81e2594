"""Generation from a decoder-only language model with Hugging Face `generate`'s semantics:
greedy search and beam search (zoo.decode.lm_beam) give its ids token for token, and so does
sampling from the same seed while no row ends early.

All prompts run as one left-padded batch (zoo.decode.lm_state): one prefill forward, then one
forward of the newest id per step through the KV cache. Each step's logits go through Hugging
Face's processors and, when sampling, its warpers (zoo.decode.logits_processors); greedy search
takes the argmax, sampling draws with `torch.multinomial` from a generator seeded by
`config.seed`. A row ends at EOS, at a stop string or at its length limit
(zoo.decode.lm_stopping) and then leaves the batch, where Hugging Face would keep it and pad it;
on a static cache (`StaticLMState.keeps_rows`) it stays, its further ids ignored, since leaving
would change the shapes the steps run with.
Greedy and beam search give each prompt the same ids alone or in any batch; sampling draws for
all rows from one stream, so a prompt's sample depends on the batch it is in (as Hugging Face's).

Shape key: N rows, V vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from zoo.decode.lm_beam import beam_search_lm
from zoo.decode.lm_config import GenerationConfig
from zoo.decode.lm_state import CausalLM, LMState
from zoo.decode.lm_static import StaticLMState, steps_per_call
from zoo.decode.lm_stopping import Stopping, new_token_limits
from zoo.decode.logits_processors import greedy_biases, process, warp


def check_prompts(model: CausalLM, prompts: list[list[int]]) -> None:
    """Every prompt has at least one id, each in the vocabulary, and leaves room for one new id
    in the context (ValueError otherwise; callers cut long prompts first)."""
    for i, prompt in enumerate(prompts):
        if not prompt:
            raise ValueError(f"prompt {i} is empty (start it with an id, the end-of-text id say)")
        if len(prompt) > model.max_len - 1:
            raise ValueError(
                f"prompt {i} has {len(prompt)} ids; the context of {model.max_len} leaves room for "
                f"{model.max_len - 1} before one new id"
            )
        if min(prompt) < 0 or max(prompt) >= model.vocab_size:
            raise ValueError(f"prompt {i} has an id outside the vocabulary of {model.vocab_size}")


@torch.inference_mode()
def generate(
    model: CausalLM,
    prompts: list[list[int]],
    config: GenerationConfig,
    *,
    decode: Callable[[list[int]], str] | None = None,
    on_token: Callable[[int], None] | None = None,
    use_cache: bool = True,
) -> list[list[int]]:
    """Continue each prompt: its new ids, in the input order; with num_return_sequences n, n
    lists a prompt, consecutive (samples in the order drawn; beam search's best first).

    A row's ids end with the id that ended it: EOS, or the id that completed a stop string (both
    kept, as Hugging Face keeps them), unless it reached max_new_tokens or the context's end.

    Args:
        model: the language model (in eval mode).
        prompts: id lists, each at most model.max_len - 1 long.
        config: the settings (Hugging Face's names and meanings).
        decode: ids -> text, needed for config.stop_strings.
        on_token: called with each new id of the only prompt as it is chosen (streaming; with
            beam search, once the search ends, since no id is final before).
        use_cache: decode incrementally with the KV cache (False: re-run the whole sequences).
    """
    config.check()
    if on_token is not None and (len(prompts) != 1 or config.num_return_sequences != 1):
        asked = f"{len(prompts)} prompt(s) x {config.num_return_sequences}"
        raise ValueError(f"on_token streams one sequence; {asked} were asked")
    check_prompts(model, prompts)
    if not prompts:
        return []
    if config.num_beams == 1:  # each prompt's samples are rows of their own, as Hugging Face's
        prompts = [prompt for prompt in prompts for _ in range(config.num_return_sequences)]
    stopping = Stopping(config.eos_id, config.stop_strings, decode)
    limits = new_token_limits([len(p) for p in prompts], config.max_new_tokens, model.max_len)
    with _state(model, prompts, config, limits, use_cache) as state:
        if config.num_beams > 1:
            outputs = beam_search_lm(state, config, stopping, limits)
            for token in outputs[0] if on_token is not None else []:
                on_token(token)
            return outputs
        return _one_per_row(state, config, stopping, limits, on_token)


def _state(
    model: CausalLM, prompts: list[list[int]], config: GenerationConfig, limits: list[int], use_cache: bool
) -> LMState:
    """The batch's decoding state: a static cache where the config asks for one."""
    if config.cache_implementation != "static":
        return LMState(model, prompts, pad_id=_pad_id(config), use_cache=use_cache)
    if not use_cache:
        raise ValueError("cache_implementation 'static' needs use_cache")
    steps = steps_per_call(model, config, model.output_weight.device)
    width = max(len(p) for p in prompts)  # the last column left padding may push
    # A call's last steps may pass the longest row's end (their ids ignored): they need columns too.
    needed = width + max(limits) + steps - 1
    if config.max_cache_len and config.max_cache_len < needed:
        raise ValueError(
            f"max_cache_len {config.max_cache_len} cannot hold the prompts' {width} columns and "
            f"{needed - width} new ({max(limits)} tokens, {steps} steps a call)"
        )
    return StaticLMState(
        model, prompts, pad_id=_pad_id(config), length=config.max_cache_len or static_length(needed),
        compile=config.compile, steps_per_call=steps,
    )  # fmt: skip


def static_length(needed: int) -> int:
    """A static cache's positions for `needed`: the next power of two (at least 16). On a GPU every
    step attends over the whole buffer (on the CPU over the columns written so far), so the whole
    context (1,024 positions for GPT-2) would cost a short generation several times what it
    reads; powers of two keep the compiled graphs few (one per length and batch size) for
    generations of any length."""
    return max(16, 1 << (needed - 1).bit_length())


def _pad_id(config: GenerationConfig) -> int:
    """Hugging Face pads with EOS when no padding id is given."""
    if config.pad_id is not None:
        return config.pad_id
    return config.eos_id if config.eos_id is not None else 0


def _one_per_row(
    state: LMState,
    config: GenerationConfig,
    stopping: Stopping,
    limits: list[int],
    on_token: Callable[[int], None] | None,
) -> list[list[int]]:
    """Greedy search or sampling: one id per row and step (several a call where the static state
    runs several steps a call) until every row has ended. Ended rows leave the batch, except on
    a static cache, where they stay, ignored."""
    device = state.tokens.device
    done = torch.zeros(len(limits), dtype=torch.bool, device=device)
    generator = torch.Generator(device=device).manual_seed(config.seed) if config.do_sample else None
    active = torch.arange(len(limits), device=device)  # each row's prompt
    row_limits = torch.tensor(limits, device=device)
    outputs: list[list[int]] = [[] for _ in limits]
    steps = state.steps_per_call
    generated = 0  # ids each row has had so far (ended rows of a static cache too)
    while True:
        if generated and steps > 1:
            biases = greedy_biases(config, generated, steps, state.model.vocab_size, device)
            chosen = state.next_greedy_ids(biases)
        else:
            scores = process(state.next_logits(), state.tokens, state.real, generated, config)
            chosen = _pick(scores, config, generator)
        state.append(chosen)
        streamed = chosen[0].tolist() if on_token is not None else None
        for column in range(chosen.shape[1]):  # each new id in turn, as one step at a time gives it
            generated += 1
            so_far = state.tokens[:, state.prompt_width : state.prompt_width + generated]  # the new ids
            if streamed is not None:
                on_token(streamed[column])
            ended = stopping.ended(so_far, row_limits) & ~done
            if not ended.any():
                continue
            for row in ended.nonzero().squeeze(1).tolist():
                outputs[int(active[row])] = so_far[row].tolist()
            if state.keeps_rows:
                done |= ended
                if done.all():
                    return outputs
                continue
            if ended.all():
                return outputs
            keep = (~ended).nonzero().squeeze(1)  # ended rows leave the batch (one id a step here)
            active, row_limits, done = active[keep], row_limits[keep], done[keep]
            state.select(keep)


def _pick(scores: Tensor, config: GenerationConfig, generator: torch.Generator | None) -> Tensor:
    """(N, V) processed scores -> (N, 1) the next ids: the argmax, or a draw from the warped
    distribution."""
    if not config.do_sample:
        return scores.argmax(dim=-1, keepdim=True)
    probs = warp(scores, config).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator)
