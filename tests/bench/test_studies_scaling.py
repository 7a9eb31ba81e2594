"""bench.studies.scaling's measurements against the textbook: var(q.k) = d_k for unit-variance
entries, a softmax that saturates (and stops passing gradient to the scores) as d_k grows unless the
scores are scaled by 1/sqrt(d_k), the softmax's Jacobian, the gradient at q and k (the scores'
through q.k, times 1/sqrt(d_k) when scaled, and finite differences); and the study's files from a
tiny run."""

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


def softmax_backward(scores, upstream):
    """d (upstream . softmax(scores)) / d scores, written out: p (g - p.g)."""
    weights = scores.softmax(-1)
    return weights * (upstream - (weights * upstream).sum(-1, keepdim=True))


def central_differences(loss, tensor, eps=1e-6):
    """d loss / d tensor, one entry at a time, by (loss(x + eps) - loss(x - eps)) / (2 eps)."""
    grad = torch.zeros_like(tensor)
    for i in range(tensor.numel()):
        step = torch.zeros(tensor.numel(), dtype=tensor.dtype)
        step[i] = eps
        step = step.view_as(tensor)
        grad.view(-1)[i] = (loss(tensor + step) - loss(tensor - step)) / (2 * eps)
    return grad


def test_score_gradients_are_the_softmax_jacobian_applied_to_the_upstream_gradient():
    scores = torch.randn(6, 5, dtype=torch.float64)
    upstream = torch.randn(scores.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    expected = softmax_backward(scores, upstream)
    torch.testing.assert_close(scaling.score_gradients(scores, seed=3), expected.norm(dim=-1))


@pytest.mark.parametrize("scaled", [False, True])
def test_query_and_key_gradients_are_the_score_gradient_through_q_k_times_the_scale(scaled):
    d_k, rows = 16, 150  # 1/sqrt(16) = 1/4; 150 rows: two chunks, the second a short one
    q, k = (torch.cat(side) for side in zip(*scaling.unit_queries_keys(d_k, rows=rows)))
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    scores = scale * (q @ k.transpose(1, 2))[:, 0]
    d_scores = softmax_backward(scores, scaling.upstream_gradient(rows, scaling.KEYS))
    torch.testing.assert_close(scaling.score_gradients(scores), d_scores.norm(dim=-1))
    queries, keys = scaling.query_key_gradients(d_k, scaled=scaled, rows=rows)
    # d loss / d q = scale sum_j (d loss / d s_j) k_j; d loss / d k_j = scale (d loss / d s_j) q
    torch.testing.assert_close(queries, (scale * d_scores[:, None] @ k).flatten(1).norm(dim=-1))
    torch.testing.assert_close(keys, (scale * d_scores[..., None] * q).flatten(1).norm(dim=-1))


@pytest.mark.parametrize("scaled", [False, True])
def test_attention_gradients_match_finite_differences_of_the_loss(scaled):
    generator = torch.Generator().manual_seed(1)
    q, k, upstream = (
        torch.randn(*shape, generator=generator, dtype=torch.float64)
        for shape in ((2, 1, 4), (2, 3, 4), (2, 3))
    )
    scale = 0.5 if scaled else 1.0  # 1/sqrt(d_k), d_k = 4

    def loss(q, k):
        return ((scale * q @ k.transpose(1, 2))[:, 0].softmax(-1) * upstream).sum()

    grad_q, grad_k = scaling.attention_gradients(q, k, upstream, scaled=scaled)
    torch.testing.assert_close(grad_q, central_differences(lambda x: loss(x, k), q), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(grad_k, central_differences(lambda x: loss(q, x), k), rtol=1e-6, atol=1e-9)


def test_scaled_q_gets_the_same_at_every_d_k_and_unscaled_more_at_small_d_k_less_in_median_at_large():
    q_norms = {
        (d_k, scaled): scaling.query_key_gradients(d_k, scaled=scaled, rows=200)[0]
        for d_k in D_KS
        for scaled in (False, True)
    }
    median = {key: norms.median().item() for key, norms in q_norms.items()}
    scaled = [median[d_k, True] for d_k in D_KS]
    # 1/sqrt(d_k) on the way back cancels keys of norm ~sqrt(d_k); without it this grows 8-fold
    assert max(scaled) < 1.2 * min(scaled), scaled
    assert median[8, False] > 2 * median[8, True] and median[512, False] < 0.5 * median[512, True]
    for d_k in D_KS:  # by the mean, unscaled q gets more at every d_k: its median hides a heavy tail
        assert q_norms[d_k, False].mean() > q_norms[d_k, True].mean(), d_k


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
    for statistic in ("mean", "median"):
        assert record["softmax"][0]["scaled"][f"query_grad_norm_{statistic}"] > 0
        assert record["softmax"][0]["scaled"][f"key_grad_norm_{statistic}"] > 0
    assert set(record["cost"][0]["peak_bytes"]) == {"scaled_dot", "dot", "additive"}
    page = (tmp_path / "studies_scaling.md").read_text()
    assert "| 16 |" in page and "additive / scaled_dot time" in page
    assert "at q, unscaled" in page and "at k, unscaled" in page
    assert (tmp_path / "studies_scaling_softmax.png").stat().st_size > 0
    assert (tmp_path / "studies_scaling_cost.png").stat().st_size > 0
