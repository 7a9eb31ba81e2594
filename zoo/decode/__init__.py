"""Decoding for any encoder-decoder that fits zoo.decode.protocol.EncoderDecoder."""

from zoo.decode.beam import beam_search, length_penalty
from zoo.decode.greedy import greedy_search
from zoo.decode.protocol import EncoderDecoder, Hypotheses
from zoo.decode.sampling import filter_logprobs, sample

__all__ = ["EncoderDecoder", "Hypotheses", "beam_search", "filter_logprobs", "greedy_search",
           "length_penalty", "sample"]
