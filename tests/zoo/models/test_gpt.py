"""zoo GPT alone: the KV cache, causality, left padding, the fused loss, activation checkpointing,
the presets, the parameter and FLOP counts (its Hugging Face parity is in
tests/zoo/convert/test_hf_gpt2.py, its generation in tests/zoo/decode/test_lm_*.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from zoo.models.gpt import GPT, PRESETS, GPTModelConfig, build_gpt

VOCAB = 53


def tiny(seed: int = 0, **overrides) -> GPT:
    """A small GPT with noise on every parameter (biases and norms too), in eval mode."""
    torch.manual_seed(seed)
    settings = dict(num_layers=2, dim=32, num_heads=4, max_len=40, dropout=0.0, attn_dropout=0.0)
    model = build_gpt(GPTModelConfig(**{**settings, **overrides}), VOCAB)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return model.eval()


def random_ids(batch: int = 3, length: int = 12, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def test_cached_incremental_forward_equals_full_forward_at_every_step():
    model, ids = tiny(), random_ids()
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :4], cache=cache)]  # a prompt, then one id at a time
    steps += [model(ids[:, t : t + 1], cache=cache) for t in range(4, ids.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_left_padding_leaves_the_real_positions_logits_unchanged():
    model, ids = tiny(), random_ids()
    lengths = [12, 9, 5]  # rows keep their last `length` ids, left-padded to 12
    width = ids.shape[1]
    real = torch.arange(width) >= width - torch.tensor(lengths)[:, None]
    padded = ids.masked_fill(~real, 0)
    positions = (real.cumsum(1) - 1).clamp(min=0)
    logits = model(padded, positions=positions, key_mask=real)
    for row, length in enumerate(lengths):
        alone = model(ids[row : row + 1, width - length :])
        torch.testing.assert_close(logits[row : row + 1, width - length :], alone, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_left_padded_cached_decoding_equals_the_full_padded_forward():
    model, ids = tiny(), random_ids()
    width = ids.shape[1]
    real = torch.arange(width) >= width - torch.tensor([12, 7, 3])[:, None]
    real[:, 6:] = True  # the prompts end at column 6; the columns after are generated
    positions = (real.cumsum(1) - 1).clamp(min=0)
    full = model(ids, positions=positions, key_mask=real)
    cache = model.new_cache()
    steps = [model(ids[:, :6], cache=cache, positions=positions[:, :6], key_mask=real[:, :6])]
    for t in range(6, width):
        steps.append(
            model(
                ids[:, t : t + 1], cache=cache, positions=positions[:, t : t + 1], key_mask=real[:, : t + 1]
            )
        )
    torch.testing.assert_close(torch.cat(steps, dim=1)[real], full[real], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_future_ids_do_not_change_earlier_logits():
    model, ids = tiny(), random_ids()
    changed = ids.clone()
    changed[:, 7:] = random_ids(seed=9)[:, 7:]
    before, after = model(ids), model(changed)
    torch.testing.assert_close(before[:, :7], after[:, :7], atol=0.0, rtol=0.0)
    assert not torch.allclose(before[:, 7:], after[:, 7:])


def test_loss_sums_equal_cross_entropy_of_the_logits():
    model, ids = tiny(), random_ids()
    targets = random_ids(seed=2)
    targets[1, 3:6] = -100  # ignored
    sums = model(ids, targets)
    logits = model(ids)
    expected = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), reduction="sum", ignore_index=-100)
    torch.testing.assert_close(sums.loss, expected, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(sums.nll, expected, atol=1e-4, rtol=1e-5)
    assert sums.units == (targets != -100).sum()


def test_a_tiny_model_overfits_one_batch():
    torch.manual_seed(0)
    model = build_gpt(GPTModelConfig(num_layers=2, dim=32, num_heads=2, max_len=32, dropout=0.0), VOCAB)
    ids = random_ids(batch=4, length=17)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        sums = model(ids[:, :-1], ids[:, 1:])
        optimizer.zero_grad()
        (sums.loss / sums.units).backward()
        optimizer.step()
    assert (sums.loss / sums.units).item() < 0.1  # from log(53) = 4.0


def count_calls(modules: torch.nn.ModuleList) -> list[int]:
    """How many times each of `modules` is called from now on (counts that rise in place)."""
    calls = [0] * len(modules)

    def hook(index: int):
        return lambda *_: calls.__setitem__(index, calls[index] + 1)

    for index, module in enumerate(modules):
        module.register_forward_pre_hook(hook(index))
    return calls


def test_activation_checkpointing_recomputes_each_block_and_gives_the_same_loss_and_gradients():
    """Each block runs once in forward and, checkpointed, once more in backward, where its
    activations are recomputed instead of kept."""
    ids, targets = random_ids(), random_ids(seed=2)
    results = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        cfg = GPTModelConfig(
            num_layers=2, dim=32, num_heads=4, max_len=40, activation_checkpointing=checkpointing
        )
        model = build_gpt(cfg, VOCAB).train()  # dropout on: checkpointing must replay its draws
        assert model.blocks.checkpointing is checkpointing
        calls = count_calls(model.blocks.layers)
        torch.manual_seed(1)
        sums = model(ids, targets)
        assert calls == [1, 1]
        sums.loss.backward()
        assert calls == ([2, 2] if checkpointing else [1, 1])
        results.append((sums.loss.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (loss, grads), (loss_ckpt, grads_ckpt) = results
    torch.testing.assert_close(loss_ckpt, loss, atol=0.0, rtol=0.0)
    for name, grad in grads.items():
        torch.testing.assert_close(grads_ckpt[name], grad, atol=1e-6, rtol=1e-5, msg=name)


@pytest.mark.parametrize("preset", [p for p in PRESETS if not p.startswith("gpt2")])
def test_presets_forward_and_backward(preset):
    torch.manual_seed(0)
    model = build_gpt(GPTModelConfig(preset=preset), VOCAB)
    ids = random_ids(batch=2, length=16)
    logits = model(ids)
    assert logits.shape == (2, 16, VOCAB)
    sums = model(ids, ids)
    sums.loss.backward()
    assert torch.isfinite(logits).all() and torch.isfinite(sums.loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_gpt2_small_has_gpt2s_parameter_count():
    with torch.device("meta"):
        model = build_gpt(GPTModelConfig(preset="gpt2_small"), 50257)
    assert model.num_parameters() == 124_439_808  # GPT-2 small's published count (tied output)


def test_flops_per_token_by_hand():
    vocab, dim, layers, ffn, context = 100, 16, 3, 40, 24
    model = build_gpt(GPTModelConfig(num_layers=layers, dim=dim, num_heads=2, ffn_dim=ffn, max_len=32), vocab)
    per_layer = (
        2 * 2 * dim + (3 * dim * dim + 3 * dim) + (dim * dim + dim) + (dim * ffn + ffn) + (ffn * dim + dim)
    )
    n = vocab * dim + layers * per_layer + 2 * dim  # tied output; the position table left out
    assert model.num_parameters() == n + 32 * dim
    assert model.flops_per_token(context) == 6 * n + 12 * layers * context * dim
