"""The sizes both parsers share, declared once: zoo's encoder-decoder config names them
(zoo.models.encoder_decoder.ModelConfig) and the parsers reuse its fields with a small parser's
defaults, so one help text serves the chart parser, the seq2seq parser and translation."""

from __future__ import annotations

from dataclasses import Field, field
from typing import Any

from zoo.models.encoder_decoder import ModelConfig

PARSER_DEFAULTS: dict[str, Any] = {
    "encoder_layers": 2,
    "decoder_layers": 2,
    "dim": 128,
    "ffn_dim": 256,
    "num_heads": 4,
    "positions": "learned",
    "max_len": 512,
}


def sized(name: str) -> Field:
    """zoo's ModelConfig field `name`, with its help, at the small parser's default (or zoo's)."""
    zoo = ModelConfig.__dataclass_fields__[name]
    return field(default=PARSER_DEFAULTS.get(name, zoo.default), metadata=zoo.metadata)
