"""Decoding for any encoder-decoder that fits zoo.decode.protocol.EncoderDecoder, and Hugging
Face-style generation for decoder-only language models (zoo.decode.lm_generate)."""

from zoo.decode.batched import decode_sorted
from zoo.decode.beam import beam_search, length_penalty
from zoo.decode.greedy import greedy_search
from zoo.decode.lm_config import GenerationConfig
from zoo.decode.lm_generate import generate
from zoo.decode.protocol import BoundInputs, EncoderDecoder, Hypotheses
from zoo.decode.sampling import filter_logprobs, sample
from zoo.decode.state import AllowedTokens

__all__ = [
    "AllowedTokens",
    "BoundInputs",
    "EncoderDecoder",
    "GenerationConfig",
    "Hypotheses",
    "beam_search",
    "decode_sorted",
    "filter_logprobs",
    "generate",
    "greedy_search",
    "length_penalty",
    "sample",
]
