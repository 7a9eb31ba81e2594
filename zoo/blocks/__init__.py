"""The shared core every zoo model is assembled from."""

from zoo.blocks.attention import MultiHeadAttention, attention_maps, attention_reference
from zoo.blocks.attention_scores import SCORES, AdditiveScore
from zoo.blocks.cache import CausalCache, DecoderCache, DecoderLayerCache, KVCache
from zoo.blocks.dropout import Dropout
from zoo.blocks.embeddings import SequenceEmbedding, TokenEmbedding
from zoo.blocks.ffn import ACTIVATIONS, FeedForward
from zoo.blocks.init import init_transformer_
from zoo.blocks.layers import DecoderLayer, EncoderLayer, LayerSpec, Residual
from zoo.blocks.local_attention import LocalAttention
from zoo.blocks.masks import causal_mask, lengths_mask, local_mask, padding_mask
from zoo.blocks.mixers import MIXERS, Conv, Recurrent, SelfAttentionMixer, build_mixer
from zoo.blocks.norms import NORMS, build_norm
from zoo.blocks.output_loss import LossSums, linear_cross_entropy
from zoo.blocks.partitioned import ConcatPositions, partition_
from zoo.blocks.positions import POSITIONS, LearnedPositions, SinusoidalPositions, resample_grid
from zoo.blocks.stacks import CausalStack, Decoder, Encoder, self_attention_mask, stochastic_depth_rates

__all__ = [
    "ACTIVATIONS",
    "MIXERS",
    "NORMS",
    "POSITIONS",
    "SCORES",
    "AdditiveScore",
    "CausalCache",
    "CausalStack",
    "ConcatPositions",
    "Conv",
    "Decoder",
    "DecoderCache",
    "DecoderLayer",
    "DecoderLayerCache",
    "Dropout",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "KVCache",
    "LayerSpec",
    "LearnedPositions",
    "LocalAttention",
    "LossSums",
    "MultiHeadAttention",
    "Recurrent",
    "Residual",
    "SelfAttentionMixer",
    "SequenceEmbedding",
    "SinusoidalPositions",
    "TokenEmbedding",
    "attention_maps",
    "attention_reference",
    "build_mixer",
    "build_norm",
    "causal_mask",
    "init_transformer_",
    "lengths_mask",
    "linear_cross_entropy",
    "local_mask",
    "padding_mask",
    "partition_",
    "resample_grid",
    "self_attention_mask",
    "stochastic_depth_rates",
]
