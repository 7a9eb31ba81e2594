"""The bert_finetune recipe schema: the runner's sections plus `head`, `model`, `data` and `decode`.

`head` picks the fine-tuning task (Devlin et al., 2019, section 4), as parsing's `model.kind`
picks its parser: one recipe shape for all three, and an option only one head reads
(OWNERS) must stay at its default under another head. The defaults are the embedded default
(configs/bert/finetune_default.yaml says the same): a tiny random BERT classifying the
built-in sentences, offline, a few minutes on two CPU cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from zoo.config import Invalid
from zoo.models.bert import BertModelConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig

# head -> the Hugging Face pipeline (and zoo.convert.hf_bert_heads kind) of its model.
HEADS = {"classify": "text-classification", "tag": "token-classification", "span": "question-answering"}
# The encoder's size when it starts from random weights; model.init brings its own.
RANDOM_SIZE = {"num_layers": 2, "dim": 128, "num_heads": 2, "ffn_dim": 512, "max_len": 128}
SIZE_FIELDS = ("num_layers", "dim", "num_heads", "ffn_dim", "max_len", "type_vocab_size", "norm_eps")


@dataclass
class ModelConfig(BertModelConfig):
    """The encoder (BertModelConfig's size and dropouts), where its weights start, and the head's
    dropout. With model.init the size is the pretrained encoder's; the dropouts stay the recipe's."""

    init: str = field(
        default="",
        metadata={
            "help": "'' = random weights of the size above | a BERT pretraining run directory or "
            "checkpoint (python -m zoo train bert) | a Hugging Face BERT directory or hub name: the "
            "encoder and its WordPiece tokenizer come from it, the size fields stay at their defaults"
        },
    )
    init_sha256: str = field(
        default="",
        metadata={
            "help": "the SHA-256 of model.init's model.safetensors (a local Hugging Face directory), "
            "checked before the weights are read ('' = not checked)"
        },
    )
    head_dropout: float = field(
        default=0.1, metadata={"help": "classify, tag: dropout before the head's linear layer"}
    )

    def check(self) -> None:
        if self.init_sha256 and not re.fullmatch(r"[0-9a-fA-F]{64}", self.init_sha256):
            raise Invalid("init_sha256", f"must be 64 hex digits, not {self.init_sha256!r}")
        if self.init_sha256 and not self.init:
            raise Invalid("init_sha256", "is the hash of model.init's weights: set that too")
        if not 0 <= self.head_dropout < 1:
            raise Invalid("head_dropout", f"must be in [0, 1), not {self.head_dropout}")
        if self.init:
            random = ModelConfig(**RANDOM_SIZE)
            for name in SIZE_FIELDS:
                if getattr(self, name) != getattr(random, name):
                    raise Invalid(
                        name, f"the encoder's size comes from model.init ({self.init}): leave it out"
                    )


@dataclass
class DataConfig:
    data_dir: str = field(
        default="", metadata={"resume": "may change", "help": "data directory ('' = $ZOO_DATA_DIR)"}
    )
    train: str = field(
        default="",
        metadata={
            "help": "the training file under data_dir ('' = the head's built-in set): classify a TSV, "
            "tag a CoNLL file, span a SQuAD v1.1 JSON"
        },
    )
    valid: str = field(
        default="",
        metadata={
            "help": "the validation file, of data.train's format ('' = classify, tag: carved from "
            "data.train; span: data.train's articles after the first data.train_articles)"
        },
    )
    test: str = field(
        default="", metadata={"help": "the test file, of data.train's format ('' = the validation split)"}
    )
    builtin_seed: int = field(default=0, metadata={"help": "built-in set: seed of its documents"})
    builtin_sizes: list[int] = field(
        default_factory=lambda: [600, 100, 100],
        metadata={"help": "built-in set: train, valid and test documents (zoo.data.corpus)"},
    )
    vocab_size: int = field(
        default=600,
        metadata={
            "help": "random weights: the WordPiece vocabulary trained on the training text (600 keeps "
            "the built-in set's invented names in syllable pieces, seen and unseen names alike)"
        },
    )
    max_seq_length: int = field(default=128, metadata={"help": "tokens per input with [CLS] and [SEP]"})
    batch_size: int = field(default=32, metadata={"help": "inputs per micro-batch, per rank"})
    eval_batch_size: int = field(
        default=64, metadata={"resume": "may change", "help": "inputs per evaluation batch"}
    )
    text_columns: list[str] = field(
        default_factory=lambda: ["sentence"],
        metadata={"help": "classify: the TSV's text column(s), two for a sentence pair"},
    )
    label_column: str = field(default="label", metadata={"help": "classify: the TSV's label column"})
    labels: list[str] = field(
        default_factory=list,
        metadata={"help": "classify: the labels in output order ([] = those of the training file, sorted)"},
    )
    word_column: int = field(default=0, metadata={"help": "tag: the CoNLL column of the word"})
    tag_column: int = field(default=-1, metadata={"help": "tag: the CoNLL column of the tag"})
    dev_size: int = field(
        default=1000, metadata={"help": "tag, classify without data.valid: examples carved from train as dev"}
    )
    dev_seed: int = field(default=0, metadata={"help": "tag, classify: seed of the dev carve"})
    dev_min_words: int = field(
        default=0,
        metadata={
            "help": "classify: carve the dev set from examples of at least N words and drop the training "
            "examples inside them (a phrase-level training set such as SST-2's); 0 = a plain carve"
        },
    )
    train_articles: int = field(
        default=38, metadata={"help": "span: the first N articles train, the rest are held out"}
    )
    doc_stride: int = field(
        default=128, metadata={"help": "span: passage tokens between the starts of two windows"}
    )
    max_query_length: int = field(default=64, metadata={"help": "span: question tokens kept"})

    def check(self) -> None:
        if len(self.builtin_sizes) != 3 or min(self.builtin_sizes) < 1:
            raise Invalid("builtin_sizes", f"must be 3 positive counts, not {self.builtin_sizes}")
        for key in ("max_seq_length", "batch_size", "eval_batch_size", "doc_stride", "max_query_length"):
            if getattr(self, key) < 1:
                raise Invalid(key, f"must be at least 1, not {getattr(self, key)}")
        if self.dev_min_words < 0:
            raise Invalid("dev_min_words", f"must be 0 (a plain carve) or more, not {self.dev_min_words}")
        if not 1 <= len(self.text_columns) <= 2:
            raise Invalid("text_columns", f"one column (a sentence) or two (a pair), not {self.text_columns}")
        if self.labels and not self.train:
            raise Invalid("labels", "the built-in set brings its own labels: name data.train to set them")


@dataclass
class DecodeConfig:
    n_best: int = field(default=20, metadata={"help": "span: answers kept per question before the best"})
    max_answer_length: int = field(default=30, metadata={"help": "span: the longest answer in tokens"})

    def check(self) -> None:
        for key in ("n_best", "max_answer_length"):
            if getattr(self, key) < 1:
                raise Invalid(key, f"must be at least 1, not {getattr(self, key)}")


@dataclass
class DistillConfig:
    """Knowledge distillation (Hinton et al., 2015): the loss per example is
    (1 - alpha) x cross-entropy with the gold label + alpha x T^2 x KL(teacher || student), both
    distributions softened by the temperature T. The teacher's logits on the training set are
    computed once, before the first step."""

    teacher: str = field(
        default="",
        metadata={
            "help": "classify: a bert_finetune run directory or checkpoint with the same labels, whose "
            "predictions the model also learns ('' = no distillation); its own tokenizer reads the text"
        },
    )
    alpha: float = field(default=0.5, metadata={"help": "the teacher term's weight, in [0, 1]"})
    temperature: float = field(default=1.0, metadata={"help": "T, above 0: higher softens both sides"})
    augment: int = field(
        default=0,
        metadata={
            "help": "copies of each training text, words masked and n-grams cut (tasks.bert.finetune."
            "augment), that the teacher labels and the model learns without gold labels (0 = none)"
        },
    )

    def check(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise Invalid("alpha", f"must be in [0, 1], not {self.alpha}")
        if self.temperature <= 0:
            raise Invalid("temperature", f"must be above 0, not {self.temperature}")
        if self.augment < 0:
            raise Invalid("augment", f"must be 0 or more, not {self.augment}")
        if self.augment and not self.teacher:
            raise Invalid("augment", "the copies are labelled by the teacher: set distill.teacher")


# Options read by some heads only: under another head they must stay at their defaults.
OWNERS = {
    **dict.fromkeys(("data.text_columns", "data.label_column", "data.labels"), ("classify",)),
    **dict.fromkeys(("data.word_column", "data.tag_column"), ("tag",)),
    **dict.fromkeys(("data.dev_size", "data.dev_seed"), ("tag", "classify")),
    "data.dev_min_words": ("classify",),
    **dict.fromkeys(
        (
            "data.train_articles",
            "data.doc_stride",
            "data.max_query_length",
            "decode.n_best",
            "decode.max_answer_length",
        ),
        ("span",),
    ),  # fmt: skip
    **dict.fromkeys((f"distill.{f.name}" for f in fields(DistillConfig)), ("classify",)),
    "model.head_dropout": ("classify", "tag"),
}


def _default_train() -> TrainConfig:
    # One thread: a model this small gains nothing from more, and loses when cores are shared.
    return TrainConfig(
        out_dir="runs/bert-finetune-default",
        max_steps=600,
        log_every=50,
        eval_every=200,
        best_metric="score",
        threads=1,
    )


@dataclass
class FinetuneConfig(RunConfig):
    """The whole recipe; the defaults are the embedded default (configs/bert/finetune_default.yaml)."""

    head: str = field(
        default="classify",
        metadata={
            "help": "classify (a sentence or pair -> a label, from the pooled [CLS]) | tag (words -> "
            "B-/I-/O tags, at each word's first piece) | span (question + passage -> an answer span)"
        },
    )
    model: ModelConfig = field(default_factory=lambda: ModelConfig(**RANDOM_SIZE))
    data: DataConfig = field(default_factory=DataConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    train: TrainConfig = field(default_factory=_default_train)
    optim: OptimConfig = field(
        default_factory=lambda: OptimConfig(
            name="adamw", lr=1e-3, betas=[0.9, 0.999], eps=1e-6, weight_decay=0.01
        )
    )
    schedule: ScheduleConfig = field(default_factory=lambda: ScheduleConfig(name="linear", warmup_steps=60))

    def check(self) -> None:
        if self.head not in HEADS:
            raise Invalid("head", f"{self.head!r} is not one of {', '.join(HEADS)}")
        defaults = {"model": ModelConfig(**RANDOM_SIZE), "data": DataConfig(), "decode": DecodeConfig(),
                    "distill": DistillConfig()}  # fmt: skip
        for key, heads in OWNERS.items():
            section, name = key.split(".")
            value = getattr(getattr(self, section), name)
            if self.head not in heads and value != getattr(defaults[section], name):
                raise Invalid(key, f"only for the {' and '.join(heads)} head; head is {self.head}")
        if self.data.max_seq_length <= self.data.max_query_length + 3 and self.head == "span":
            raise Invalid("data.max_seq_length", "leaves no room for the passage after the question")
