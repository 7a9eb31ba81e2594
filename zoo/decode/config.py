"""The `decode` section of a recipe: the searches' settings, shared by every task that decodes
with zoo.decode (translation, the seq2seq parser). A task sets its own defaults where it places
the section (`field(default_factory=lambda: DecodeConfig(beam_size=21))`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid


@dataclass
class DecodeConfig:
    beam_size: int = field(default=4, metadata={"help": "beam width for test decoding (1 = greedy)"})
    alpha: float = field(
        default=0.6, metadata={"help": "length penalty exponent of lp(Y) = ((5 + |Y|) / 6)^alpha"}
    )
    max_len_a: float = field(
        default=1.0, metadata={"help": "hypotheses stop at max_len_a * source length + max_len_b tokens"}
    )
    max_len_b: int = field(default=50, metadata={"help": "see max_len_a"})
    patience: float = field(
        default=0.0,
        metadata={
            "help": "beam search also stops a sentence once round(patience x beam_size) hypotheses "
            "have ended (fairseq and CTranslate2: 1; faster, may miss a better one); 0 = only "
            "when no live beam can win (the exact result)"
        },
    )
    eval_beam_size: int = field(
        default=1,
        metadata={"help": "beam width at the evaluations during training (1 = greedy, fast)"},
    )
    max_tokens: int = field(
        default=0, metadata={"help": "source tokens per decoding batch (0 = data.max_tokens)"}
    )

    def check(self) -> None:
        if self.patience < 0:
            raise Invalid(
                "patience", f"must be at least 0 (0 = the exact stopping rule), not {self.patience}"
            )
