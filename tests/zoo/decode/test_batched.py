import pytest
import torch

from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.decode import decode_sorted, greedy_search

SPECIALS = dict(special=SPECIAL_IDS)


def random_sources(n: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 12, (n,), generator=g).tolist()
    return [torch.randint(4, 19, (k,), generator=g).tolist() for k in lengths]


def test_sorted_batches_give_each_source_its_own_hypothesis_in_input_order(model):
    sources = random_sources(17)

    def search(src, positions):
        return greedy_search(model, src, max_len_b=6, **SPECIALS)

    batched = decode_sorted(model, sources, search, special=SPECIAL_IDS, max_tokens=30)
    alone = [
        greedy_search(model, torch.tensor([s + [SPECIAL_IDS.eos]]), max_len_b=6, **SPECIALS).best()[0]
        for s in sources
    ]
    assert batched == alone


def test_the_search_receives_each_rows_input_position(model):
    sources = random_sources(9, seed=1)

    def search(src, positions):
        def emit_position(sequences, prefixes):
            mask = torch.zeros(prefixes.shape[0], 19, dtype=torch.bool)
            token = torch.where(
                torch.tensor(prefixes.shape[1] > 0), SPECIAL_IDS.eos, 4 + positions[sequences]
            )
            mask[torch.arange(prefixes.shape[0]), token] = True
            return mask

        return greedy_search(model, src, allowed_tokens=emit_position, **SPECIALS)

    assert decode_sorted(model, sources, search, special=SPECIAL_IDS, max_tokens=20) == [
        [4 + i] for i in range(9)
    ]


def test_lengths_limits_and_the_position_table(model):
    def search(src, positions):
        return greedy_search(model, src, **SPECIALS)

    assert decode_sorted(model, [], search, special=SPECIAL_IDS, max_tokens=8) == []
    with pytest.raises(UserError, match="max_len 128"):
        decode_sorted(model, [[5] * 128], search, special=SPECIAL_IDS, max_tokens=8)


def test_decoding_never_asks_for_a_position_past_the_table(model):
    """A limit far beyond max_len (128) is capped: the decoder input stays within 128 positions."""

    def never_end(sequences, prefixes):
        return (torch.arange(19) != SPECIAL_IDS.eos).expand(prefixes.shape[0], -1)

    out = greedy_search(model, torch.tensor([[5, 6]]), max_len_b=1000, allowed_tokens=never_end, **SPECIALS)
    assert len(out.best()[0]) == 127
