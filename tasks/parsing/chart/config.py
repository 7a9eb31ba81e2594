"""The chart parser's model options (Kitaev & Klein, 2018): the shared encoder sizes, its
character CNN, its span label MLP and the factored encoder."""

from __future__ import annotations

from dataclasses import dataclass, field

from tasks.parsing.bert import ReaderConfig
from tasks.parsing.sizes import sized
from zoo.config import Invalid
from zoo.models.checks import check_model_values


@dataclass
class ChartModelConfig(ReaderConfig):
    encoder_layers: int = sized("encoder_layers")
    dim: int = sized("dim")
    ffn_dim: int = sized("ffn_dim")
    num_heads: int = sized("num_heads")
    dropout: float = sized("dropout")
    attn_dropout: float = sized("attn_dropout")
    pre_norm: bool = sized("pre_norm")
    positions: str = sized("positions")
    max_len: int = sized("max_len")
    char_dim: int = field(
        default=32,
        metadata={
            "help": "chart: character embedding width of the character CNN added to word embeddings "
            "(0 = words only)"
        },
    )
    label_hidden: int = field(default=256, metadata={"help": "chart: hidden width of the span label MLP"})
    partitioned: bool = field(
        default=False,
        metadata={
            "help": "chart: Kitaev & Klein's factored encoder: content (words, characters, BERT) and "
            "positions as two halves of dim that attention and FFNs keep apart (zoo.blocks.partitioned)"
        },
    )

    def check(self) -> None:
        check_model_values(self)
        ReaderConfig.check(self)
        if self.dim % 2:
            raise Invalid("dim", f"must be even (the chart parser splits it in two halves), not {self.dim}")
        if self.partitioned and self.dim % (2 * self.num_heads):
            raise Invalid("dim", f"a factored encoder needs dim divisible by 2 x num_heads, not {self.dim}")
