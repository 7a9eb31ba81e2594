"""BeamKVCache: rows reading shared per-sentence buffers through their ancestry attend as
per-row copies do."""

import pytest
import torch

from zoo.blocks import DecoderCache, MultiHeadAttention


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
