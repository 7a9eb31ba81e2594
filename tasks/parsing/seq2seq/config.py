"""The seq2seq parser's model options: zoo's encoder-decoder (its ModelConfig, at a small
parser's defaults), the word pointer and the BERT reader. Words in, tree symbols out: two
vocabularies, so embeddings are never shared."""

from __future__ import annotations

from dataclasses import dataclass, field

from tasks.parsing.bert import ReaderConfig
from tasks.parsing.sizes import sized
from zoo.config import Invalid
from zoo.models.encoder_decoder import ModelConfig


@dataclass
class Seq2SeqModelConfig(ModelConfig, ReaderConfig):
    encoder_layers: int = sized("encoder_layers")
    decoder_layers: int = sized("decoder_layers")
    dim: int = sized("dim")
    ffn_dim: int = sized("ffn_dim")
    num_heads: int = sized("num_heads")
    positions: str = sized("positions")
    max_len: int = sized("max_len")
    share_embeddings: bool = field(
        default=False, metadata={"help": "seq2seq: must stay false (words in, tree symbols out)"}
    )
    word_pointer: bool = field(
        default=False,
        metadata={
            "help": "seq2seq: add the encoder's state of the next word to attach (the count of XX so "
            "far) to every decoder input; not in the paper (see tasks/parsing/seq2seq/model.py)"
        },
    )

    def check(self) -> None:
        ModelConfig.check(self)
        ReaderConfig.check(self)
        if self.share_embeddings:
            raise Invalid("share_embeddings", "the parser reads words and writes symbols: two vocabularies")
        if self.arch != "transformer":
            raise Invalid("arch", "the seq2seq parser is the paper's Transformer (arch: transformer)")
