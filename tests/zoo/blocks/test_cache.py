"""KV caches: growth keeps the history, cross caches fill once, reorder selects rows."""

import torch

from zoo.blocks import DecoderCache, KVCache


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


def test_cross_cache_is_set_once_and_reordered_with_the_beams():
    cache = KVCache(cross=True)
    assert cache.is_empty
    k, v = _kv(3, 5, 0)
    cache.set(k, v)
    order = torch.tensor([2, 0, 0])
    cache.reorder(order)
    torch.testing.assert_close(cache.keys, k[order], rtol=0, atol=0)
    torch.testing.assert_close(cache.values, v[order], rtol=0, atol=0)


def test_decoder_cache_offset_and_reorder_of_every_layer():
    cache = DecoderCache.empty(2)
    assert cache.offset == 0
    for layer in cache.layers:
        layer.self_attn.append(*_kv(2, 3, 1))
        layer.cross_attn.set(*_kv(2, 4, 2))
    assert cache.offset == 3
    before = [layer.self_attn.keys.clone() for layer in cache.layers]
    cache.reorder(torch.tensor([1, 1]))
    for layer, keys in zip(cache.layers, before):
        torch.testing.assert_close(layer.self_attn.keys, keys[[1, 1]], rtol=0, atol=0)
        assert layer.cross_attn.keys.shape[0] == 2
