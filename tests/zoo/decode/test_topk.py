import pytest
import torch

from zoo.decode.topk import BLOCK, top_k


@pytest.mark.parametrize("vocab", [8000, 8000 + BLOCK // 2, 4 * 8 * BLOCK, 100])
@pytest.mark.parametrize("k", [1, 2, 8])
def test_top_k_equals_torch_topk(vocab, k):
    torch.manual_seed(vocab + k)
    scores = torch.randn(50, vocab).log_softmax(dim=1)
    values, columns = top_k(scores, k)
    expected_values, expected_columns = scores.topk(k, dim=1)
    assert torch.equal(values, expected_values)
    assert torch.equal(columns, expected_columns)  # distinct random values: the same columns


def test_top_k_with_masked_entries_and_clusters():
    """The largest entries crowded into one block, the tail, and rows mostly -inf (the
    allowed-token hook): the values still equal torch's, and every column holds its value."""
    torch.manual_seed(0)
    scores = torch.randn(6, 8000 + 7)
    scores[0, 64:72] += 100.0  # all of the top 8 in one block
    scores[1, -7:] += 100.0  # in the partial last block
    scores[2, :] = float("-inf")
    scores[2, [5, 4000, 8003]] = torch.tensor([1.0, 3.0, 2.0])  # fewer finite entries than k
    scores[3, 1000:1100] = 5.0  # ties across blocks
    values, columns = top_k(scores, 8)
    assert torch.equal(values, scores.topk(8, dim=1).values)
    assert torch.equal(scores.gather(1, columns), values)
    assert columns[0].sort().values.tolist() == list(range(64, 72))
    assert columns[2, :3].tolist() == [4000, 8003, 5]
