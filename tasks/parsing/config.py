"""The parsing recipe schema: the runner's sections plus `model`, `data` and `decode`.

The defaults are the embedded default (configs/parsing/default.yaml says the same): the chart
parser on the built-in grammar treebank, so `python -m tasks.parsing.train` works with no file
and no data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from tasks.parsing.chart.config import ChartModelConfig
from tasks.parsing.seq2seq.config import Seq2SeqModelConfig
from zoo.config import Invalid
from zoo.decode.config import DecodeConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig

KINDS = {"chart": ChartModelConfig, "seq2seq": Seq2SeqModelConfig}  # model.kind -> its options


@dataclass
class ParserModelConfig(ChartModelConfig, Seq2SeqModelConfig):
    """The recipe's `model` section: `kind` picks the parser, whose own options
    (ChartModelConfig, Seq2SeqModelConfig) this joins, so that one recipe file and every saved
    checkpoint (which holds them all) keep one shape. Options of the other parser must stay at
    their defaults."""

    kind: str = field(
        default="chart",
        metadata={
            "help": "chart (Kitaev & Klein 2018: span scores + CKY) | seq2seq (the paper: linearized trees)"
        },
    )

    def check(self) -> None:
        if self.kind not in KINDS:
            raise Invalid("kind", f"{self.kind!r} is not one of {', '.join(KINDS)}")
        own = {f.name for f in fields(KINDS[self.kind])} | {"kind"}
        for f in fields(self):
            if f.name not in own and getattr(self, f.name) != f.default:
                raise Invalid(f.name, f"only the {' or '.join(set(KINDS) - {self.kind})} parser has it")
        KINDS[self.kind].check(self)


@dataclass
class DataConfig:
    source: str = field(
        default="grammar",
        metadata={
            "help": "grammar (built in, no data) | sample (NLTK's PTB sample) | wsj (sections 02-21/22/23)"
        },
    )
    data_dir: str = field(
        default="", metadata={"resume": "may change", "help": "data directory ('' = $ZOO_DATA_DIR)"}
    )
    path: str = field(
        default="",
        metadata={
            "resume": "may change",
            "help": "treebank folder, relative to data_dir ('' = ptb-sample/combined for sample; "
            "wsj needs it)",
        },
    )
    grammar_seed: int = field(default=0, metadata={"help": "grammar: seed of the built-in treebank"})
    grammar_sizes: list[int] = field(
        default_factory=lambda: [3000, 300, 300], metadata={"help": "grammar: train, dev and test trees"}
    )
    max_tokens: int = field(
        default=1500,
        metadata={
            "help": "words per micro-batch, padding counted (seq2seq: the longer of words and symbols)"
        },
    )
    max_train_words: int = field(
        default=0, metadata={"help": "drop longer training sentences (0 = keep all)"}
    )
    unk_prob: float = field(
        default=0.5,
        metadata={
            "help": "replace training words seen once by <unk> with this probability (so <unk> is learned)"
        },
    )
    extra_train: list[str] = field(
        default_factory=list,
        metadata={
            "help": "bracketed tree files added to the training trees, e.g. a parser's own parses of "
            "unlabeled text (python -m tasks.parsing.silver) for self-training; their tags and "
            "labels must be the treebank's, the vocabulary stays the treebank's"
        },
    )
    extra_vocab_min_count: int = field(
        default=0,
        metadata={
            "help": "words of data.extra_train seen at least this many times join the word "
            "vocabulary, after the treebank's (the paper's semi-supervised vocabulary grew with its "
            "silver text); 0 = the vocabulary stays the treebank's"
        },
    )
    upsample_primary: int = field(
        default=1,
        metadata={
            "help": "repeat the treebank's training trees this many times beside data.extra_train "
            "(fairseq's --upsample-primary)"
        },
    )

    def check(self) -> None:
        if self.upsample_primary < 1:
            raise Invalid("upsample_primary", f"must be at least 1, not {self.upsample_primary}")
        if not 0 <= self.unk_prob <= 1:
            raise Invalid("unk_prob", f"is a probability: must be in [0, 1], not {self.unk_prob}")


def _default_train() -> TrainConfig:
    # One thread: this model's matrices are too small to gain from more, and extra OpenMP
    # threads slow it down badly when other processes share the cores.
    return TrainConfig(
        out_dir="runs/parsing-default",
        max_steps=400,
        log_every=50,
        eval_every=200,
        save_every=200,
        clip_norm=1.0,
        best_metric="f1",
        threads=1,
    )


@dataclass
class ParsingConfig(RunConfig):
    """The whole recipe; the defaults are the embedded default (configs/parsing/default.yaml)."""

    model: ParserModelConfig = field(default_factory=ParserModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    decode: DecodeConfig = field(
        default_factory=lambda: DecodeConfig(beam_size=21, alpha=0.3, max_len_b=300)
    )  # the paper's beam 21, alpha 0.3, output length <= input + 300
    label_smoothing: float = field(default=0.1, metadata={"help": "seq2seq: the paper's eps_ls"})
    tag_weight: float = field(
        default=1.0, metadata={"help": "chart: weight of the part-of-speech loss beside the span hinge loss"}
    )
    train: TrainConfig = field(default_factory=_default_train)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(name="adam", lr=1e-3, betas=[0.9, 0.98]))
    schedule: ScheduleConfig = field(
        default_factory=lambda: ScheduleConfig(name="inverse_sqrt", warmup_steps=100)
    )
