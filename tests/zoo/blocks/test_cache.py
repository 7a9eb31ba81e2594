"""KV caches: growth keeps the history, cross caches fill once, reorder selects rows."""

import pytest
import torch

from zoo.blocks import DecoderCache, KVCache, MultiHeadAttention


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


@pytest.fixture(params=["fresh", "nan"])
def fresh_memory(request, monkeypatch):
    """Fresh buffers as allocated, or full of NaN (what uninitialised memory may hold)."""
    if request.param == "nan":
        new_empty = torch.Tensor.new_empty
        monkeypatch.setattr(
            torch.Tensor, "new_empty", lambda self, *a, **kw: new_empty(self, *a, **kw).fill_(float("nan"))
        )


def test_beams_reading_shared_histories_attend_like_per_row_copies(fresh_memory):
    """BeamKVCache (no key/value copied on reorder) gives what per-row caches reordered by copy
    give: through the beams' expansion, random reorders within sentences and a sentence leaving,
    even when its uninitialised buffers hold NaN (masked slots must never be read as NaN)."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(8, 2).double().eval()
    sources, beams = 2, 3
    shared, copied = DecoderCache.empty(1, beams=beams), DecoderCache.empty(1)

    def step(rows: int) -> None:
        x = torch.randn(rows, 1, 8, dtype=torch.float64)
        ours = attn(x, cache=shared.layers[0].self_attn)
        torch.testing.assert_close(ours, attn(x, cache=copied.layers[0].self_attn), rtol=0, atol=1e-12)

    step(sources)  # the first step runs once per source
    rows = torch.arange(sources).repeat_interleave(beams)
    for _ in range(20):  # past the first capacity (16 steps)
        shared.reorder(rows), copied.reorder(rows)
        step(sources * beams)
        rows = (torch.arange(sources)[:, None] * beams + torch.randint(0, beams, (sources, beams))).flatten()
    rows = rows[beams:]  # the first sentence leaves
    shared.reorder(rows), copied.reorder(rows)
    shared.select_sources(torch.tensor([1]))
    step(beams)
    assert shared.offset == copied.offset == 22
