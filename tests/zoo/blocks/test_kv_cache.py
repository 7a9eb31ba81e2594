"""KVCache: growth keeps the history, cross caches fill once, reorder selects rows."""

import torch

from zoo.blocks.kv_cache import KVCache


def _kv(b: int, t: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, t, 4, generator=gen), torch.randn(b, 2, t, 4, generator=gen)


def test_append_returns_the_concatenated_history_across_growth():
    cache = KVCache()
    ks, vs = [], []
    for step in range(40):  # past the first capacity of 16 and its doubling
        k, v = _kv(3, 1 if step % 5 else 3, step)
        ks.append(k), vs.append(v)
        keys, values = cache.append(k, v)
        torch.testing.assert_close(keys, torch.cat(ks, 2), rtol=0, atol=0)
        torch.testing.assert_close(values, torch.cat(vs, 2), rtol=0, atol=0)
    assert len(cache) == sum(k.shape[2] for k in ks) and not cache.is_empty


def test_cross_cache_is_set_once_and_selected_by_source():
    cache = KVCache(cross=True)
    assert cache.is_empty
    k, v = _kv(3, 5, 0)
    cache.set(k, v)
    order = torch.tensor([2, 0])
    cache.reorder(order)
    torch.testing.assert_close(cache.keys, k[order], rtol=0, atol=0)
    torch.testing.assert_close(cache.values, v[order], rtol=0, atol=0)


def test_reorder_keeps_histories_and_growth_continues_after_it():
    cache = KVCache()
    for step in range(20):  # reorders before and after the first growth (capacity 16)
        k, v = _kv(3, 1, step)
        history = cache.append(k, v)[0].clone()
        order = torch.tensor([step % 3, 0, 2])
        cache.reorder(order)
        torch.testing.assert_close(cache.keys, history[order], rtol=0, atol=0)
        assert cache.keys.shape[0] == 3 and len(cache) == step + 1
