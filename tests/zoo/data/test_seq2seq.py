import numpy as np
import pytest
import torch

from zoo.data.seq2seq import Ids, SequencePairs, pad
from zoo.data.special import SPECIAL_IDS, SpecialIds

ROWS = [[5, 6, 7], [], [300], [9, 9, 9, 9, 9]]


def reference_pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    """Row by row, the obvious way."""
    width = max(map(len, rows))
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])


@pytest.mark.parametrize("first, last", [(None, None), (2, None), (None, 3), (2, 3)])
def test_pad_equals_a_row_by_row_reference(first, last):
    ids = Ids.from_rows(ROWS, vocab_size=400)
    for indices in ([0, 1, 2, 3], [3, 1], [1], [2, 2, 0]):
        rows = [
            ([first] if first is not None else []) + ROWS[i] + ([last] if last is not None else [])
            for i in indices
        ]
        got = pad(ids, indices, -1, first=first, last=last)
        assert got.dtype == torch.long and torch.equal(got, reference_pad(rows, -1))


def test_ids_storage_round_trip_and_dtype():
    ids = Ids.from_rows(ROWS, vocab_size=400)
    assert ids.flat.dtype == np.uint16 and Ids.from_rows(ROWS, vocab_size=70_000).flat.dtype == np.int32
    assert len(ids) == 4 and [ids.row(i) for i in range(4)] == ROWS
    assert ids.lengths.tolist() == [3, 0, 1, 5]
    joined = Ids.concat([(ids.flat, ids.lengths), (ids.flat, ids.lengths)])
    assert [joined.row(i) for i in range(8)] == ROWS + ROWS


@pytest.mark.parametrize("special", [SPECIAL_IDS, SpecialIds(pad=1, unk=0, bos=3, eos=2)])
def test_collation_follows_the_special_ids(special):
    targets = [[11, 12], [13], [14, 15, 16], [17]]
    pairs = SequencePairs(Ids.from_rows(ROWS), Ids.from_rows(targets))
    batch = pairs.collate([3, 0, 1], special)
    b, e, p = special.bos, special.eos, special.pad
    assert torch.equal(batch.src, reference_pad([ROWS[3] + [e], ROWS[0] + [e], [e]], p))
    assert torch.equal(batch.tgt_in, reference_pad([[b, 17], [b, 11, 12], [b, 13]], p))
    assert torch.equal(batch.tgt_out, reference_pad([[17, e], [11, 12, e], [13, e]], p))
    assert batch.tgt_tokens == int((batch.tgt_out != p).sum()) == 7
    assert pairs.src_lengths.tolist() == [4, 1, 2, 6] and pairs.tgt_lengths.tolist() == [3, 2, 4, 2]


def test_pairs_must_align():
    with pytest.raises(ValueError, match="3 sources but 2 targets"):
        SequencePairs(Ids.from_rows(ROWS[:3]), Ids.from_rows(ROWS[:2]))
