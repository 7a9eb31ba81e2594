"""DecoderCache: beams reorder the self-attention caches, leaving sources the cross ones."""

import torch

from zoo.blocks import DecoderCache


def _kv(b: int, t: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, t, 4, generator=gen), torch.randn(b, 2, t, 4, generator=gen)


def test_decoder_cache_reorders_rows_and_selects_sources_apart():
    """Beams (rows) reorder the self-attention caches only: the cross-attention keys of the
    sources stay where they are, in one copy, until sources leave."""
    cache = DecoderCache.empty(2)
    assert cache.offset == 0
    for layer in cache.layers:
        layer.self_attn.append(*_kv(2, 3, 1))
        layer.cross_attn.set(*_kv(2, 4, 2))
    assert cache.offset == 3
    before = [layer.self_attn.keys.clone() for layer in cache.layers]
    cross = [layer.cross_attn.keys for layer in cache.layers]
    rows = torch.tensor([0, 0, 1, 1])  # two beams per source
    cache.reorder(rows)
    for layer, keys, cross_keys in zip(cache.layers, before, cross):
        torch.testing.assert_close(layer.self_attn.keys, keys[rows], rtol=0, atol=0)
        assert layer.cross_attn.keys.data_ptr() == cross_keys.data_ptr()
        assert layer.cross_attn.keys.shape[0] == 2
    cache.select_sources(torch.tensor([1]))
    for layer, cross_keys in zip(cache.layers, cross):
        torch.testing.assert_close(layer.cross_attn.keys, cross_keys[1:], rtol=0, atol=0)
