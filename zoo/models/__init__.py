"""Assembled, reusable models: no data, no losses."""

from zoo.models.encoder_decoder import ModelConfig, Transformer, build_model

__all__ = ["ModelConfig", "Transformer", "build_model"]
