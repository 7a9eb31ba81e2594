"""Decoding for any encoder-decoder that fits zoo.decode.protocol.EncoderDecoder."""

from zoo.decode.batched import decode_sorted
from zoo.decode.beam import beam_search, length_penalty
from zoo.decode.greedy import greedy_search
from zoo.decode.protocol import BoundInputs, EncoderDecoder, Hypotheses
from zoo.decode.sampling import filter_logprobs, sample
from zoo.decode.state import AllowedTokens

__all__ = [
    "AllowedTokens",
    "BoundInputs",
    "EncoderDecoder",
    "Hypotheses",
    "beam_search",
    "decode_sorted",
    "filter_logprobs",
    "greedy_search",
    "length_penalty",
    "sample",
]
