"""Assembled, reusable models: no data, no losses."""

from zoo.models.encoder_decoder import ModelConfig, Transformer, build_model
from zoo.models.recurrent_seq2seq import RecurrentSeq2Seq
from zoo.models.seq2seq import Seq2Seq

__all__ = ["ModelConfig", "RecurrentSeq2Seq", "Seq2Seq", "Transformer", "build_model"]
