"""The BERT pretraining recipe schema: the runner's sections plus `model` and `data`.

The defaults are the embedded default (configs/bert/default.yaml says the same): a tiny BERT on
the built-in corpus, a few minutes on two CPU cores, offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid
from zoo.data.corpus_split import CorpusConfig
from zoo.models.bert import BertModelConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig

SOURCES = ("synthetic", "wikiextractor", "text")


@dataclass
class DataConfig(CorpusConfig):
    source: str = field(
        default="synthetic",
        metadata={
            "help": "synthetic (built in, no files) | wikiextractor (a folder of wiki_NN files) | "
            "text (files with one document per blank-line-separated block)"
        },
    )
    tokenizer: str = field(
        default="",
        metadata={
            "help": "an existing vocab.txt (a Hugging Face BERT's), tokenizer.json, or a directory "
            "holding one (a zoo run, a Hugging Face checkpoint) ('' = train WordPiece on the "
            "training documents; it is saved in the run and inside every checkpoint)"
        },
    )
    lowercase: bool = field(default=True, metadata={"help": "lowercase and strip accents (uncased BERT)"})
    vocab_size: int = field(
        default=30522,
        metadata={
            "help": "WordPiece vocabulary to train (BERT: 30522; the built-in corpus uses its own words)"
        },
    )
    max_seq_length: int = field(
        default=128, metadata={"help": "tokens per example with [CLS] and both [SEP] (BERT: 128, then 512)"}
    )
    short_seq_prob: float = field(
        default=0.1, metadata={"help": "probability that a document aims at a random shorter length"}
    )
    masked_lm_prob: float = field(default=0.15, metadata={"help": "fraction of tokens predicted"})
    max_predictions_per_seq: int = field(default=20, metadata={"help": "at most this many per example"})
    whole_word_mask: bool = field(default=False, metadata={"help": "mask all pieces of a word together"})
    batch_size: int = field(default=32, metadata={"help": "examples per micro-batch, per rank"})
    eval_batch_size: int = field(
        default=128, metadata={"resume": "may change", "help": "examples per evaluation batch"}
    )
    eval_limit: int = field(
        default=0,
        metadata={
            "resume": "may change",
            "help": "evaluate on the first N held-out examples (0 = all; for quick checks)",
        },
    )

    def check(self) -> None:
        if not 0 < self.masked_lm_prob <= 1:
            raise Invalid("masked_lm_prob", f"must be in (0, 1], not {self.masked_lm_prob}")
        if not 0 <= self.short_seq_prob <= 1:
            raise Invalid("short_seq_prob", f"is a probability: must be in [0, 1], not {self.short_seq_prob}")


def _default_model() -> BertModelConfig:
    return BertModelConfig(num_layers=2, dim=128, num_heads=2, ffn_dim=512, max_len=128)


def _default_data() -> DataConfig:
    return DataConfig(vocab_size=1000, max_seq_length=64, batch_size=32, wikitext="")


def _default_train() -> TrainConfig:
    return TrainConfig(
        out_dir="runs/bert-default",
        max_steps=1500,
        log_every=50,
        eval_every=500,
        best_metric="mlm_acc",
        threads=1,
    )


@dataclass
class BertPretrainingConfig(RunConfig):
    """The whole recipe; the defaults are the embedded default."""

    model: BertModelConfig = field(default_factory=_default_model)
    data: DataConfig = field(default_factory=_default_data)
    train: TrainConfig = field(default_factory=_default_train)
    optim: OptimConfig = field(
        default_factory=lambda: OptimConfig(
            name="adamw", lr=1e-3, betas=[0.9, 0.999], eps=1e-6, weight_decay=0.01
        )
    )
    schedule: ScheduleConfig = field(default_factory=lambda: ScheduleConfig(name="linear", warmup_steps=150))
