"""bench.studies.flops: the analytic multiply-add counts equal what torch's FLOP counter sees
in the models' forward passes, and training is about three forwards.

(The counter does not see inside the LSTM's fused CPU kernel, so the recurrent cases are GRU and
tanh RNN; an LSTM differs from them only in its number of gates.)"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.studies.flops import forward_macs, training_flops_per_target_token
from zoo.models import ModelConfig, build_model

VOCAB, S, T = 50, 7, 5


def counted_flops(model: torch.nn.Module, *, backward: bool) -> int:
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(4, VOCAB, (1, S), generator=g), torch.randint(4, VOCAB, (1, T), generator=g)
    with FlopCounterMode(display=False) as counter:
        logits = model(src, tgt)
        if backward:
            logits.sum().backward()
    return counter.get_total_flops()


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"num_heads": 4, "key_dim": 2, "encoder_layers": 1, "decoder_layers": 3},
        {"arch": "rnn", "cell": "gru"},
        {"arch": "rnn", "cell": "rnn", "encoder_layers": 1, "decoder_layers": 3},
    ],
    ids=["transformer", "transformer_key_dim", "gru", "tanh_rnn"],
)
def test_counts_equal_torchs_flop_counter(changes):
    torch.manual_seed(0)
    sizes = dict(dim=16, rnn_dim=24, ffn_dim=32, num_heads=2, encoder_layers=2, decoder_layers=2)
    cfg = ModelConfig(**(sizes | changes), dropout=0.0, share_embeddings=False)
    # Eval mode: attention over S, T <= 8 positions is then written out as products the counter
    # sees (it has no formula for the fused CPU kernel).
    model = build_model(cfg, VOCAB, VOCAB, 0).eval()
    assert counted_flops(model, backward=False) == 2 * forward_macs(cfg, VOCAB, S, T)
    # The backward pass skips the gradients nothing needs (of the ids' embeddings' inputs).
    training = training_flops_per_target_token(cfg, VOCAB, [(S, T)]) * T
    assert counted_flops(model, backward=True) == pytest.approx(training, rel=0.02)
