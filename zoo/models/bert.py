"""BERT (Devlin et al., 2019) for pretraining, assembled from zoo.blocks, with Hugging Face's
`BertForPreTraining` weights convertible both ways.

The encoder is the paper's post-norm Transformer encoder with GELU and LayerNorm eps 1e-12; the
input is word + learned position + token type embeddings, normalised. Two heads read it: the
masked-LM head (dense, GELU, LayerNorm, then the word embeddings transposed plus a bias of its
own) and the next-sentence head (a linear layer over the pooled [CLS] state). Every weight starts
N(0, 0.02), biases zero, norms one (`initializer_range` of the original).

Shape key: B batch, T tokens, D model dim, V vocabulary, M predicted (masked) positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.blocks import Dropout, Encoder, LayerSpec, LearnedPositions, TokenEmbedding
from zoo.config import UserError
from zoo.convert import fuse_qkv, rename, split_qkv

INIT_STD = 0.02


@dataclass
class BertModelConfig:
    num_layers: int = field(default=12, metadata={"help": "encoder layers L (BERT-base 12)"})
    dim: int = field(default=768, metadata={"help": "hidden size H (BERT-base 768)"})
    num_heads: int = field(default=12, metadata={"help": "attention heads A (BERT-base 12)"})
    ffn_dim: int = field(default=3072, metadata={"help": "feed-forward width (4 H)"})
    max_len: int = field(default=512, metadata={"help": "positions of the learned table"})
    type_vocab_size: int = field(default=2, metadata={"help": "token types (segments A and B)"})
    dropout: float = field(default=0.1, metadata={"help": "dropout on embeddings and residual branches"})
    attn_dropout: float = field(default=0.1, metadata={"help": "dropout on attention weights"})
    norm_eps: float = field(default=1e-12, metadata={"help": "LayerNorm epsilon (BERT: 1e-12)"})


class PretrainingLogits(NamedTuple):
    """mlm: (B, T, V), or (M, V) at the masked positions in row-major order. nsp: (B, 2),
    index 0 = B continues A (Hugging Face's next_sentence_label)."""

    mlm: Tensor
    nsp: Tensor


class BertEmbeddings(nn.Module):
    """ids (B, T), token types (B, T) -> LayerNorm(word + position + type) with dropout (B, T, D)."""

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        max_len: int,
        type_vocab_size: int,
        pad_id: int,
        dropout: float,
        norm_eps: float,
    ) -> None:
        super().__init__()
        self.tokens = TokenEmbedding(vocab_size, dim, padding_idx=pad_id, scale=False)
        self.positions = LearnedPositions(max_len, dim)
        self.token_types = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=norm_eps)
        self.dropout = Dropout(dropout)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        x = self.tokens(input_ids) + self.positions(input_ids.shape[1]) + self.token_types(token_type_ids)
        return self.dropout(self.norm(x))


class MaskedLMHead(nn.Module):
    """hidden (..., D) -> logits (..., V): dense, GELU, LayerNorm, then the tied word embeddings
    transposed (passed in, so the weight has one owner) plus this head's bias."""

    def __init__(self, dim: int, vocab_size: int, *, norm_eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(dim, eps=norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: Tensor, word_embeddings: Tensor) -> Tensor:
        return F.linear(self.norm(self.act(self.dense(hidden))), word_embeddings, self.bias)


class Bert(nn.Module):
    """BERT with its pooler and both pretraining heads.

    Args:
        vocab_size: V. dim: D. num_layers: encoder layers. num_heads: attention heads.
        ffn_dim: feed-forward width. max_len: positions. type_vocab_size: segment types.
        pad_id: the [PAD] id (its embedding row starts at zero, as in Hugging Face).
        dropout: on embeddings and residual branches. attn_dropout: on attention weights.
        norm_eps: every LayerNorm's epsilon.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        dim: int,
        num_layers: int,
        num_heads: int,
        ffn_dim: int,
        max_len: int = 512,
        type_vocab_size: int = 2,
        pad_id: int = 0,
        dropout: float = 0.1,
        attn_dropout: float = 0.1,
        norm_eps: float = 1e-12,
    ) -> None:
        super().__init__()
        self.vocab_size, self.pad_id, self.max_len = vocab_size, pad_id, max_len
        self.embeddings = BertEmbeddings(
            vocab_size,
            dim,
            max_len=max_len,
            type_vocab_size=type_vocab_size,
            pad_id=pad_id,
            dropout=dropout,
            norm_eps=norm_eps,
        )
        spec = LayerSpec(
            dim,
            num_heads,
            ffn_dim,
            dropout=dropout,
            attn_dropout=attn_dropout,
            activation="gelu",
            norm_eps=norm_eps,
            pre_norm=False,
        )
        self.encoder = Encoder.uniform(num_layers, spec, final_norm=False)
        self.pooler = nn.Linear(dim, dim)
        self.mlm_head = MaskedLMHead(dim, vocab_size, norm_eps=norm_eps)
        self.nsp_head = nn.Linear(dim, 2)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """The original initialisation: N(0, 0.02) weights and embeddings, zero biases (the
        [PAD] row too), unit norms."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=INIT_STD)
            if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
        nn.init.normal_(self.embeddings.positions.weight, std=INIT_STD)
        self.embeddings.tokens.weight[self.pad_id].zero_()
        nn.init.zeros_(self.mlm_head.bias)

    def encode(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        """ids (B, T) -> hidden states (B, T, D). attention_mask: bool (B, T), True on real
        tokens (default: every id but [PAD])."""
        if input_ids.shape[1] > self.max_len:
            raise ValueError(f"sequence of {input_ids.shape[1]} tokens exceeds max_len {self.max_len}")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = input_ids != self.pad_id
        x = self.embeddings(input_ids, token_type_ids)
        return self.encoder(x, pad_mask=attention_mask[:, None, None, :].bool())

    def pool(self, hidden: Tensor) -> Tensor:
        """The pooled representation (B, D): tanh(dense(hidden of [CLS]))."""
        return torch.tanh(self.pooler(hidden[:, 0]))

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        *,
        masked_positions: Tensor | None = None,
    ) -> PretrainingLogits:
        """Both heads' logits.

        Args:
            masked_positions: bool (B, T); when given, the MLM head runs only there and returns
                (M, V) rather than (B, T, V): the vocabulary projection dominates a small
                model's cost and pretraining predicts 15% of the tokens.
        """
        hidden = self.encode(input_ids, token_type_ids, attention_mask)
        predicted = hidden if masked_positions is None else hidden[masked_positions]
        mlm = self.mlm_head(predicted, self.embeddings.tokens.weight)
        return PretrainingLogits(mlm, self.nsp_head(self.pool(hidden)))


def build_bert(cfg: BertModelConfig, vocab_size: int, pad_id: int) -> Bert:
    """The BERT a config describes, for a vocabulary of `vocab_size` with [PAD] at `pad_id`."""
    return Bert(
        vocab_size=vocab_size,
        dim=cfg.dim,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        ffn_dim=cfg.ffn_dim,
        max_len=cfg.max_len,
        type_vocab_size=cfg.type_vocab_size,
        pad_id=pad_id,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        norm_eps=cfg.norm_eps,
    )


# Hugging Face BertForPreTraining keys <-> zoo keys; query/key/value go through fuse_qkv.
HF_TABLE = [
    ("bert.embeddings.word_embeddings.", "embeddings.tokens."),
    ("bert.embeddings.position_embeddings.", "embeddings.positions."),
    ("bert.embeddings.token_type_embeddings.", "embeddings.token_types."),
    ("bert.embeddings.LayerNorm.", "embeddings.norm."),
    ("bert.encoder.layer.{i}.attention.self.query.", "encoder.layers.{i}.self_attn.q_proj."),
    ("bert.encoder.layer.{i}.attention.self.key.", "encoder.layers.{i}.self_attn.k_proj."),
    ("bert.encoder.layer.{i}.attention.self.value.", "encoder.layers.{i}.self_attn.v_proj."),
    ("bert.encoder.layer.{i}.attention.output.dense.", "encoder.layers.{i}.self_attn.out_proj."),
    ("bert.encoder.layer.{i}.attention.output.LayerNorm.", "encoder.layers.{i}.self_attn_res.norm."),
    ("bert.encoder.layer.{i}.intermediate.dense.", "encoder.layers.{i}.ffn.fc1."),
    ("bert.encoder.layer.{i}.output.dense.", "encoder.layers.{i}.ffn.fc2."),
    ("bert.encoder.layer.{i}.output.LayerNorm.", "encoder.layers.{i}.ffn_res.norm."),
    ("bert.pooler.dense.", "pooler."),
    ("cls.predictions.transform.dense.", "mlm_head.dense."),
    ("cls.predictions.transform.LayerNorm.", "mlm_head.norm."),
    ("cls.predictions.bias", "mlm_head.bias"),
    ("cls.seq_relationship.", "nsp_head."),
]
# Copies Hugging Face stores of tied weights, and its position-id buffer.
HF_REDUNDANT = ("cls.predictions.decoder.*", "bert.embeddings.position_ids")
# TensorFlow-era checkpoints name LayerNorm parameters gamma and beta.
_TF_NORM_NAMES = {"gamma": "weight", "beta": "bias"}


def state_from_hf(state: dict[str, Tensor], *, source: str = "checkpoint") -> dict[str, Tensor]:
    """A Hugging Face BertForPreTraining state dict in zoo `Bert` keys.

    A checkpoint of the bare encoder (BertModel: no "bert." prefix) is read as the encoder
    part; its missing heads are then reported by the strict load.
    """
    if not any(k.startswith(("bert.", "cls.")) for k in state):
        state = {f"bert.{k}": v for k, v in state.items()}
    state = {_modern_norm_name(k): v for k, v in state.items()}
    return fuse_qkv(rename(state, HF_TABLE, source=source, skip=HF_REDUNDANT))


def state_to_hf(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A zoo `Bert` state dict in Hugging Face BertForPreTraining keys. Like `save_pretrained`,
    it leaves out the tied decoder copies (HF_REDUNDANT), which loading re-ties."""
    return rename(split_qkv(state), HF_TABLE, reverse=True, source="zoo BERT")


def _modern_norm_name(key: str) -> str:
    stem, _, last = key.rpartition(".")
    return f"{stem}.{_TF_NORM_NAMES[last]}" if "LayerNorm" in stem and last in _TF_NORM_NAMES else key


def config_from_hf(hf: dict[str, Any], *, source: str = "config.json") -> tuple[BertModelConfig, int, int]:
    """(model config, vocabulary size, pad id) of a Hugging Face BERT `config.json`.

    Raises:
        UserError: for a variant this model does not have (another activation or position type).
    """
    unsupported = {"hidden_act": ("gelu",), "position_embedding_type": ("absolute",)}
    for key, allowed in unsupported.items():
        if hf.get(key, allowed[0]) not in allowed:
            raise UserError(f"{source}: {key}={hf[key]!r} is not supported (only {allowed})")
    try:
        cfg = BertModelConfig(
            num_layers=hf["num_hidden_layers"],
            dim=hf["hidden_size"],
            num_heads=hf["num_attention_heads"],
            ffn_dim=hf["intermediate_size"],
            max_len=hf["max_position_embeddings"],
            type_vocab_size=hf.get("type_vocab_size", 2),
            dropout=hf.get("hidden_dropout_prob", 0.1),
            attn_dropout=hf.get("attention_probs_dropout_prob", 0.1),
            norm_eps=hf.get("layer_norm_eps", 1e-12),
        )
        return cfg, hf["vocab_size"], hf.get("pad_token_id", 0) or 0
    except KeyError as err:
        raise UserError(f"{source}: missing key {err.args[0]!r} of a BERT config") from None


def config_to_hf(cfg: BertModelConfig, vocab_size: int, pad_id: int) -> dict[str, Any]:
    """The `config.json` of `BertForPreTraining` for this model."""
    return {
        "architectures": ["BertForPreTraining"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": cfg.dim,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "intermediate_size": cfg.ffn_dim,
        "hidden_act": "gelu",
        "hidden_dropout_prob": cfg.dropout,
        "attention_probs_dropout_prob": cfg.attn_dropout,
        "max_position_embeddings": cfg.max_len,
        "type_vocab_size": cfg.type_vocab_size,
        "initializer_range": INIT_STD,
        "layer_norm_eps": cfg.norm_eps,
        "pad_token_id": pad_id,
        "position_embedding_type": "absolute",
    }
