"""The parsing recipe schema: the runner's sections plus `model`, `data` and `decode`.

The defaults are the embedded default (configs/parsing/default.yaml says the same): the chart
parser on the built-in grammar treebank, so `python -m tasks.parsing.train` works with no file
and no data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid
from zoo.models.checks import check_model_values
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig

KINDS = ("chart", "seq2seq")


@dataclass
class ModelConfig:
    kind: str = field(
        default="chart",
        metadata={
            "help": "chart (Kitaev & Klein 2018: span scores + CKY) | seq2seq (the paper: linearized trees)"
        },
    )
    encoder_layers: int = field(default=2, metadata={"help": "encoder layers"})
    decoder_layers: int = field(default=2, metadata={"help": "seq2seq: decoder layers"})
    dim: int = field(default=128, metadata={"help": "model width d_model"})
    ffn_dim: int = field(default=256, metadata={"help": "feed-forward hidden width"})
    num_heads: int = field(default=4, metadata={"help": "attention heads"})
    dropout: float = field(default=0.1, metadata={"help": "residual and embedding dropout"})
    attn_dropout: float = field(default=0.0, metadata={"help": "dropout on attention weights"})
    pre_norm: bool = field(default=False, metadata={"help": "pre-norm residuals (the paper: post-norm)"})
    positions: str = field(
        default="learned",
        metadata={"help": "position encodings: learned (Kitaev & Klein) | sinusoidal (the paper)"},
    )
    max_len: int = field(
        default=512,
        metadata={
            "help": "position table size: chart: words + 2; seq2seq: words + 1 and tree symbols + 1 "
            "(longer sentences are reported and left unparsed)"
        },
    )
    char_dim: int = field(
        default=32,
        metadata={
            "help": "chart: character embedding width of the character CNN added to word embeddings (0 = words only)"
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
    word_pointer: bool = field(
        default=False,
        metadata={
            "help": "seq2seq: add the encoder's state of the next word to attach (the count of XX so "
            "far) to every decoder input; not in the paper (see tasks/parsing/model.py)"
        },
    )
    pretrained: str = field(
        default="",
        metadata={
            "help": "a pretrained BERT that reads the words too, fine-tuned with the parser "
            "(Kitaev et al. 2019; seq2seq: added to the encoder's input): a Hugging Face BERT directory or hub name (a tasks.bert run: "
            "python -m tasks.bert.export RUN DIR first) ('' = none); it is saved inside the parser's checkpoints"
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
        check_model_values(self)
        if self.kind not in KINDS:
            raise Invalid("kind", f"{self.kind!r} is not one of {', '.join(KINDS)}")
        if self.word_pointer and self.kind != "seq2seq":
            raise Invalid("word_pointer", "only the seq2seq parser has a word pointer")
        if self.pretrained_lr_scale <= 0:
            raise Invalid("pretrained_lr_scale", f"must be > 0, not {self.pretrained_lr_scale}")
        if self.dim % 2:
            raise Invalid("dim", f"must be even (the chart parser splits it in two halves), not {self.dim}")
        if self.partitioned and self.kind != "chart":
            raise Invalid("partitioned", "only the chart parser has a factored encoder")
        if self.partitioned and self.dim % (2 * self.num_heads):
            raise Invalid("dim", f"a factored encoder needs dim divisible by 2 x num_heads, not {self.dim}")


@dataclass
class DataConfig:
    source: str = field(
        default="grammar",
        metadata={
            "help": "grammar (built in, no data) | sample (NLTK's PTB sample) | wsj (sections 02-21/22/23)"
        },
    )
    data_dir: str = field(default="", metadata={"help": "data directory ('' = $ZOO_DATA_DIR)"})
    path: str = field(
        default="",
        metadata={
            "help": "treebank folder, relative to data_dir ('' = ptb-sample/combined for sample; wsj needs it)"
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


@dataclass
class DecodeConfig:
    beam_size: int = field(default=21, metadata={"help": "seq2seq: beam width (the paper: 21)"})
    alpha: float = field(default=0.3, metadata={"help": "seq2seq: length penalty exponent (the paper: 0.3)"})
    max_len_a: float = field(default=1.0, metadata={"help": "seq2seq: output length <= a * input + b"})
    max_len_b: int = field(default=300, metadata={"help": "seq2seq: (the paper: input + 300)"})
    eval_beam_size: int = field(
        default=1,
        metadata={
            "help": "seq2seq: beam width at the evaluations during training (1 = constrained greedy, fast)"
        },
    )
    max_tokens: int = field(default=0, metadata={"help": "words per parsing batch (0 = data.max_tokens)"})


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

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    label_smoothing: float = field(default=0.1, metadata={"help": "seq2seq: the paper's eps_ls"})
    tag_weight: float = field(
        default=1.0, metadata={"help": "chart: weight of the part-of-speech loss beside the span hinge loss"}
    )
    train: TrainConfig = field(default_factory=_default_train)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(name="adam", lr=1e-3, betas=[0.9, 0.98]))
    schedule: ScheduleConfig = field(
        default_factory=lambda: ScheduleConfig(name="inverse_sqrt", warmup_steps=100)
    )
