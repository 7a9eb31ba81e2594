"""bench.studies.scaling's measurements against the textbook: var(q.k) = d_k for unit-variance
entries, a softmax that saturates (and stops passing gradient) as d_k grows unless the scores are
scaled by 1/sqrt(d_k), the softmax's Jacobian; and the study's files from a tiny run."""

import json
import math

import pytest
import torch

from bench.studies import scaling

D_KS = (8, 32, 128, 512)


@pytest.mark.parametrize("d_k", [8, 64])
def test_score_variance_is_d_k_and_one_when_scaled(d_k):
    scores = scaling.unit_scores(d_k, rows=500)
    assert scores.shape == (500, scaling.KEYS)
    assert scores.var().item() == pytest.approx(d_k, rel=0.05)
    assert (scores / math.sqrt(d_k)).var().item() == pytest.approx(1.0, rel=0.05)


def test_unscaled_softmax_saturates_with_d_k_and_scaled_does_not():
    raw = {d_k: scaling.unit_scores(d_k, rows=200) for d_k in D_KS}
    unscaled = [scaling.saturation(raw[d_k]) for d_k in D_KS]
    scaled = [scaling.saturation(raw[d_k] / math.sqrt(d_k)) for d_k in D_KS]
    largest = [s["max_weight"] for s in unscaled]
    entropy = [s["entropy"] for s in unscaled]
    assert largest == sorted(largest) and largest[-1] > 0.85
    assert entropy == sorted(entropy, reverse=True) and entropy[-1] < 0.3
    for key in ("max_weight", "entropy"):
        values = [s[key] for s in scaled]
        assert max(values) < 1.1 * min(values), (key, values)
    median = [scaling.score_gradients(raw[d_k]).median().item() for d_k in D_KS]
    median_scaled = [scaling.score_gradients(raw[d_k] / math.sqrt(d_k)).median().item() for d_k in D_KS]
    assert median == sorted(median, reverse=True) and median[-1] < 0.05 * median_scaled[-1]


def test_score_gradients_are_the_softmax_jacobian_applied_to_the_upstream_gradient():
    scores = torch.randn(6, 5, dtype=torch.float64)
    upstream = torch.randn(scores.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    weights = scores.softmax(-1)
    expected = weights * (upstream - (weights * upstream).sum(-1, keepdim=True))  # p (g - p.g)
    torch.testing.assert_close(scaling.score_gradients(scores, seed=3), expected.norm(dim=-1))


def test_a_tiny_study_writes_its_record_page_and_figures(tmp_path, monkeypatch):
    monkeypatch.setattr(scaling, "D_KS", (8, 16))
    monkeypatch.setattr(scaling, "COST_SIZES", ((8, 4),))
    threads = torch.get_num_threads()
    try:
        record = scaling.main(["--out", str(tmp_path), "--repeats", "1"])
    finally:
        torch.set_num_threads(threads)
    assert json.loads((tmp_path / "studies_scaling.json").read_text()) == record
    assert [row["d_k"] for row in record["softmax"]] == [8, 16]
    assert set(record["cost"][0]["peak_bytes"]) == {"scaled_dot", "dot", "additive"}
    page = (tmp_path / "studies_scaling.md").read_text()
    assert "| 16 |" in page and "additive / scaled_dot time" in page
    assert (tmp_path / "studies_scaling_softmax.png").stat().st_size > 0
    assert (tmp_path / "studies_scaling_cost.png").stat().st_size > 0
