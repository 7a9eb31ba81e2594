"""GPT (Radford et al., 2018, 2019): a decoder-only Transformer language model, assembled from
zoo.blocks in GPT-2's layout (Hugging Face's `GPT2LMHeadModel` weights convert both ways in
zoo.convert.hf_gpt2).

Token embeddings plus learned positions, dropout, pre-norm causal blocks (LayerNorm, attention,
LayerNorm, a GELU feed-forward of width 4 D), a final LayerNorm, and the output projection tied
to the token embeddings (no bias). Initialisation as GPT-2: every weight N(0, 0.02), biases zero,
norms one, and the projections that write into the residual stream (attention's out_proj, the
FFN's fc2) N(0, 0.02 / sqrt(2 L)), so the stream's variance does not grow with depth.

Shape key: B batch, T tokens, D model dim, V vocabulary, L layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.blocks import CausalCache, CausalStack, Dropout, LayerSpec, LearnedPositions
from zoo.blocks.cross_entropy import label_smoothed_cross_entropy
from zoo.blocks.linear import linear
from zoo.blocks.output_loss import LossSums, linear_cross_entropy
from zoo.config import Invalid

INIT_STD = 0.02

# From a model that trains in minutes on a laptop up to GPT-2 small (124M with its 50,257 tokens).
PRESETS: dict[str, dict] = {
    "nano": dict(num_layers=2, dim=64, num_heads=2, max_len=128),
    "micro": dict(num_layers=4, dim=128, num_heads=4, max_len=256),
    "mini": dict(num_layers=6, dim=256, num_heads=4, max_len=256),
    "small": dict(num_layers=6, dim=384, num_heads=6, max_len=512),
    "gpt2_small": dict(num_layers=12, dim=768, num_heads=12, max_len=1024),
    "gpt2_medium": dict(num_layers=24, dim=1024, num_heads=16, max_len=1024),
}


@dataclass
class GPTModelConfig:
    preset: str = field(
        default="",
        metadata={
            "help": f"a named size whose values replace num_layers, dim, num_heads and max_len "
            f"('' = as given): {', '.join(PRESETS)}"
        },
    )
    num_layers: int = field(default=12, metadata={"help": "blocks L (GPT-2 small 12)"})
    dim: int = field(default=768, metadata={"help": "model width D (GPT-2 small 768)"})
    num_heads: int = field(default=12, metadata={"help": "attention heads (GPT-2 small 12)"})
    ffn_dim: int = field(default=0, metadata={"help": "feed-forward width (0 = 4 D, GPT-2's)"})
    max_len: int = field(
        default=1024, metadata={"help": "context: positions of the learned table (GPT-2 1024)"}
    )
    dropout: float = field(default=0.1, metadata={"help": "dropout on embeddings and residual branches"})
    attn_dropout: float = field(default=0.1, metadata={"help": "dropout on attention weights"})
    norm_eps: float = field(default=1e-5, metadata={"help": "LayerNorm epsilon (GPT-2: 1e-5)"})
    activation: str = field(
        default="gelu_tanh", metadata={"help": "feed-forward activation: gelu_tanh (GPT-2) | gelu | relu"}
    )
    bias: bool = field(default=True, metadata={"help": "biases in the linear layers (GPT-2: yes)"})
    activation_checkpointing: bool = field(
        default=False,
        metadata={"help": "recompute each block's activations in backward (less memory, ~1/3 more compute)"},
    )

    def resolved(self) -> GPTModelConfig:
        """This config with its preset's values filled in (the preset named, the rest as given
        where the preset leaves them)."""
        if not self.preset:
            return self
        if self.preset not in PRESETS:
            raise Invalid("preset", f"unknown preset {self.preset!r}; choose from {', '.join(PRESETS)}")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return GPTModelConfig(**{**values, **PRESETS[self.preset], "preset": ""})

    def check(self) -> None:
        cfg = self.resolved()
        for key in ("num_layers", "dim", "num_heads", "max_len"):
            if getattr(cfg, key) < 1:
                raise Invalid(key, f"must be at least 1, not {getattr(cfg, key)}")
        if cfg.dim % cfg.num_heads:
            raise Invalid("num_heads", f"{cfg.num_heads} does not divide model.dim {cfg.dim}")
        for key in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(cfg, key) < 1.0:
                raise Invalid(key, f"must be in [0, 1), not {getattr(cfg, key)}")


class GPT(nn.Module):
    """A decoder-only language model: ids (B, T) -> next-token logits (B, T, V).

    Args:
        vocab_size: V. dim: D. num_layers: L. num_heads: attention heads. ffn_dim: FFN width.
        max_len: positions (the context). dropout: on embeddings and residual branches.
        attn_dropout: on attention weights. norm_eps: LayerNorm epsilon.
        activation: a key of zoo.blocks.ACTIVATIONS. bias: biases in linear layers.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        dim: int,
        num_layers: int,
        num_heads: int,
        ffn_dim: int,
        max_len: int = 1024,
        dropout: float = 0.1,
        attn_dropout: float = 0.1,
        norm_eps: float = 1e-5,
        activation: str = "gelu_tanh",
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.vocab_size, self.max_len, self.num_layers = vocab_size, max_len, num_layers
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = LearnedPositions(max_len, dim)
        self.dropout = Dropout(dropout)
        spec = LayerSpec(
            dim,
            num_heads,
            ffn_dim,
            dropout=dropout,
            attn_dropout=attn_dropout,
            activation=activation,
            norm_eps=norm_eps,
            pre_norm=True,
            bias=bias,
        )
        self.blocks = CausalStack.uniform(num_layers, spec, final_norm=True)
        # An int8 copy of the tied output projection, set by zoo.quantize (None: the tied one).
        self.int8_output: nn.Module | None = None
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(param)
            elif param.ndim == 1:  # norm weights
                nn.init.ones_(param)
            elif name.endswith(("out_proj.weight", "fc2.weight")):  # writes into the residual stream
                nn.init.normal_(param, std=INIT_STD / math.sqrt(2 * self.num_layers))
            else:
                nn.init.normal_(param, std=INIT_STD)

    @property
    def output_weight(self) -> Tensor:
        """The output projection (V, D): the token embeddings, tied."""
        return self.tokens.weight

    @property
    def output_product_weight(self) -> Tensor | None:
        """The float weight the logits' product reads (the tied embeddings), or None where an int8
        copy computes the logits (zoo.blocks.linear.single_row_weights lays out what products read)."""
        return self.output_weight if self.int8_output is None else None

    def logits(self, hidden: Tensor) -> Tensor:
        """hidden (..., D) -> next-token logits (..., V) through the tied output projection, or
        its int8 copy when the model is quantized."""
        if self.int8_output is not None:
            return self.int8_output(hidden)
        return linear(hidden, self.output_weight)

    def new_cache(self) -> CausalCache:
        """An empty KV cache for incremental decoding (one entry per row)."""
        return self.blocks.new_cache()

    def hidden(
        self,
        ids: Tensor,
        *,
        cache: CausalCache | None = None,
        positions: Tensor | None = None,
        key_mask: Tensor | None = None,
    ) -> Tensor:
        """ids (B, T) -> the final norm's output (B, T, D), before the output projection.

        Args:
            cache: incremental decoding: `ids` are the new tokens after the cached ones.
            positions: (B, T) position ids (left-padded rows count from their first real token);
                None = cache.offset + 0..T-1.
            key_mask: (B, cache.offset + T) bool, True at real tokens (None = no padding).
        """
        offset = cache.offset if cache is not None else 0
        if positions is None:
            if offset + ids.shape[1] > self.max_len:
                raise ValueError(f"position {offset + ids.shape[1]} exceeds the context {self.max_len}")
            pos = self.positions(ids.shape[1], offset)
        else:
            pos = F.embedding(positions, self.positions.weight)
        x = self.dropout(self.tokens(ids) + pos)
        return self.blocks(x, key_mask=key_mask, cache=cache)

    def forward(
        self,
        ids: Tensor,
        targets: Tensor | None = None,
        *,
        cache: CausalCache | None = None,
        positions: Tensor | None = None,
        key_mask: Tensor | None = None,
        ignore_index: int = -100,
    ) -> Tensor | LossSums:
        """Next-token logits (B, T, V); or, given `targets` (B, T) (`ignore_index` = no target),
        the summed loss, NLL and count with the projection and the loss fused, so that no
        (B, T, V) tensor is made (nanoGPT's forward takes targets the same way); an int8 model's
        loss comes from its int8 logits, unfused. Other arguments as for `hidden`."""
        hidden = self.hidden(ids, cache=cache, positions=positions, key_mask=key_mask)
        if targets is None:
            return self.logits(hidden)
        if self.int8_output is not None:
            return LossSums(
                *label_smoothed_cross_entropy(self.logits(hidden), targets, ignore_index=ignore_index)
            )
        return linear_cross_entropy(hidden, self.output_weight, targets, ignore_index=ignore_index)

    def num_parameters(self, *, embeddings: bool = True) -> int:
        """Parameters (each tied weight once); without the token and position tables when not
        `embeddings` (Kaplan et al.'s N leaves the embeddings out)."""
        total = sum(p.numel() for p in self.parameters())
        return total if embeddings else total - self.tokens.weight.numel() - self.positions.weight.numel()

    def flops_per_token(self, context: int) -> int:
        """Training FLOPs per token at a context of `context` tokens: 6 N for the weights' products
        (forward 2 N, backward 4 N, the output projection counted in N) plus 12 L T D for attention's
        two products (PaLM's appendix B; nanoGPT's estimate_mfu; the causal mask's skipped half is
        counted, as they count it)."""
        dim = self.tokens.weight.shape[1]
        n = self.num_parameters() - self.positions.weight.numel()
        return 6 * n + 12 * self.num_layers * context * dim


def build_gpt(cfg: GPTModelConfig, vocab_size: int) -> GPT:
    """The GPT a config (its preset resolved) describes, for a vocabulary of `vocab_size`."""
    cfg = cfg.resolved()
    model = GPT(
        vocab_size=vocab_size,
        dim=cfg.dim,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        ffn_dim=cfg.ffn_dim or 4 * cfg.dim,
        max_len=cfg.max_len,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        norm_eps=cfg.norm_eps,
        activation=cfg.activation,
        bias=cfg.bias,
    )
    model.blocks.checkpointing = cfg.activation_checkpointing
    return model
