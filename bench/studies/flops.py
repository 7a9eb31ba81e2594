"""Training FLOPs of the translation models, counted analytically from their configs.

Every matrix product of the forward pass counts 2 FLOPs per multiply-add (MAC); the backward pass
runs two products of the same size for each (the gradients of the input and of the weight), so
training costs 3 x the forward: 6 FLOPs per MAC. Element-wise work (norms, activations, gates,
softmax, the additive score's tanh, dropout) is not counted, nor is padding: the counts are of
the real tokens, so they do not depend on how the batches were cut.

Multiply-adds of one sentence pair of S source and T target tokens (EOS included):

    Transformer (D dim, F ffn_dim, K = heads x key width, L_e / L_d layers, V vocabulary):
      encoder     S L_e (2 D K + 2 D^2 + 2 D F)  +  S^2 L_e (K + D)
      decoder     T L_d (2 D K + 2 D^2 + D K + D^2 + 2 D F)  +  S L_d (D K + D^2)
                  +  T^2 L_d (K + D)  +  S T L_d (K + D)
      output      T D V
    Recurrent (E dim, H rnn_dim, G gates: GRU 3, LSTM 4, tanh RNN 1, L_e / L_d layers):
      encoder     S 2 G (H/2) (E + H/2)  +  S (L_e - 1) 2 G (H/2) (H + H/2)
      attention   S 2 H^2 (keys, values)  +  T 2 H^2 (query, output)  +  S T 2 H (scores, sum)
      decoder     T G H (E + 2 H)  +  T (L_d - 1) G H 2 H  +  L_d H^2 (first state, per sentence)
      output      T ((2 H + E) E + E V)

Self-attention counts all T^2 (S^2) query-key pairs, as the written-out products compute them
(the causal half is not subtracted). `tests/bench/test_studies_flops.py` checks both formulas
against torch's FLOP counter on the models themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from zoo.blocks.mixers import GATES
from zoo.models import ModelConfig

TRAINING_FLOPS_PER_MAC = 6  # 2 per multiply-add, forward and twice that backward


def transformer_macs(cfg: ModelConfig, vocab_size: int, s: int, t: int) -> int:
    """Forward multiply-adds of the Transformer `cfg` on one pair of s source, t target tokens."""
    d, f = cfg.dim, cfg.ffn_dim
    k = cfg.num_heads * (cfg.key_dim or cfg.dim // cfg.num_heads)
    self_attn, cross_q_out, cross_kv = 2 * d * k + 2 * d * d, d * k + d * d, d * k + d * d
    encoder = s * cfg.encoder_layers * (self_attn + 2 * d * f) + s * s * cfg.encoder_layers * (k + d)
    decoder = (
        t * cfg.decoder_layers * (self_attn + cross_q_out + 2 * d * f)
        + s * cfg.decoder_layers * cross_kv
        + (t * t + s * t) * cfg.decoder_layers * (k + d)
    )
    return encoder + decoder + t * d * vocab_size


def recurrent_macs(cfg: ModelConfig, vocab_size: int, s: int, t: int) -> int:
    """Forward multiply-adds of the recurrent model `cfg` (arch rnn) on one pair."""
    e, h, g = cfg.dim, cfg.rnn_dim, GATES[cfg.cell]
    half = h // 2
    encoder = s * 2 * g * half * (e + half) + s * (cfg.encoder_layers - 1) * 2 * g * half * (h + half)
    attention = s * 2 * h * h + t * 2 * h * h + s * t * 2 * h
    decoder = t * g * h * (e + 2 * h) + t * (cfg.decoder_layers - 1) * g * h * 2 * h
    first_state = cfg.decoder_layers * h * h
    output = t * ((2 * h + e) * e + e * vocab_size)
    return encoder + attention + decoder + first_state + output


def forward_macs(cfg: ModelConfig, vocab_size: int, s: int, t: int) -> int:
    """Forward multiply-adds of the model `cfg` describes, whichever its arch."""
    count = recurrent_macs if cfg.arch == "rnn" else transformer_macs
    return count(cfg, vocab_size, s, t)


def training_flops_per_target_token(
    cfg: ModelConfig, vocab_size: int, lengths: Iterable[tuple[int, int]]
) -> float:
    """Training FLOPs per target token over a corpus of (S, T) pair lengths (EOS included): a
    run's FLOPs are its target tokens times this."""
    macs = targets = 0
    for s, t in lengths:
        macs += forward_macs(cfg, vocab_size, s, t)
        targets += t
    return TRAINING_FLOPS_PER_MAC * macs / targets
