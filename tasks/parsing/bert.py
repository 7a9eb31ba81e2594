"""A pretrained BERT reading the sentence for either parser (Kitaev et al., 2019): its last layer
at each word's first WordPiece (tasks.parsing.pieces), projected to the parser's width and added
to the word's input; the BERT is fine-tuned with the parser, at its own learning rate if asked.

Shape key: B sentences, P pieces, T positions that read a piece, D the parser's width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from zoo.config import Invalid
from zoo.convert.hf_bert import LoadedBert
from zoo.convert.pinned import load_pinned_hf_bert
from zoo.models.bert import Bert, build_bert


@dataclass
class ReaderConfig:
    """The model options both parsers have: a pretrained BERT that reads the words too."""

    pretrained: str = field(
        default="",
        metadata={
            "help": "a pretrained BERT that reads the words too, fine-tuned with the parser "
            "(Kitaev et al. 2019; seq2seq: added to the encoder's input): a Hugging Face BERT "
            "directory or hub name (a tasks.bert run: python -m tasks.bert.export RUN DIR first) "
            "('' = none); it is saved inside the parser's checkpoints"
        },
    )
    pretrained_sha256: str = field(
        default="",
        metadata={
            "help": "the SHA-256 of model.pretrained's model.safetensors (a local directory), checked "
            "before the weights are read: a mismatch is refused ('' = not checked)"
        },
    )
    pretrained_lr_scale: float = field(
        default=1.0,
        metadata={
            "help": "the pretrained BERT's learning rate as a multiple of optim.lr (its embeddings and "
            "layers; the projection into the parser trains at the full rate)"
        },
    )

    def check(self) -> None:
        if self.pretrained_lr_scale <= 0:
            raise Invalid("pretrained_lr_scale", f"must be > 0, not {self.pretrained_lr_scale}")
        if self.pretrained_sha256 and not re.fullmatch(r"[0-9a-fA-F]{64}", self.pretrained_sha256):
            raise Invalid("pretrained_sha256", f"must be 64 hex digits, not {self.pretrained_sha256!r}")
        if self.pretrained_sha256 and not self.pretrained:
            raise Invalid("pretrained_sha256", "is the hash of model.pretrained's weights: set that too")


def load_pretrained(cfg: ReaderConfig) -> LoadedBert:
    """The BERT named by `cfg.pretrained` (its encoder: the parser reads the last layer alone),
    its weights checked against `cfg.pretrained_sha256` first when that is set.

    Raises:
        UserError: the directory has no model.safetensors to check, or its SHA-256 differs.
    """
    return load_pinned_hf_bert(
        cfg.pretrained, cfg.pretrained_sha256, key="model.pretrained_sha256", encoder_only=True
    )


class BertReader(nn.Module):
    """pieces (B, P), first (B, T) -> (B, T, D): a BERT's last layer at the given pieces,
    projected. Holds the BERT's embeddings and encoder only (its heads have nothing to learn here)."""

    def __init__(self, bert: Bert, dim: int, *, lr_scale: float = 1.0) -> None:
        super().__init__()
        self.embeddings, self.encoder, self.pad_id = bert.embeddings, bert.encoder, bert.pad_id
        self.project = nn.Linear(bert.embeddings.tokens.weight.shape[1], dim)
        self.lr_scale = lr_scale  # of the pretrained weights, not of the new projection

    def forward(self, pieces: Tensor, first: Tensor) -> Tensor:
        x = self.embeddings(pieces, torch.zeros_like(pieces))
        h = self.encoder(x, pad_mask=(pieces != self.pad_id)[:, None, None, :])
        return self.project(h.gather(1, first[..., None].expand(-1, -1, h.shape[-1])))

    def lr_scales(self) -> dict[str, float]:
        """zoo.train.optim's multipliers, by parameter-name prefix within the reader."""
        return {} if self.lr_scale == 1.0 else {"embeddings.": self.lr_scale, "encoder.": self.lr_scale}


def bert_reader(spec, dim: int, lr_scale: float = 1.0) -> BertReader | None:
    """A freshly initialised reader for a `tasks.parsing.pieces.BertSpec` (its weights are loaded
    from the pretrained model or the parser's checkpoint), or None without one."""
    if spec is None:
        return None
    return BertReader(build_bert(spec.config, spec.vocab_size, spec.pad_id), dim, lr_scale=lr_scale)
