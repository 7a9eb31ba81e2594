"""The GPT language-model recipe schema: the runner's sections plus `model`, `data` and `eval`.

The defaults are the embedded default (configs/gpt/default.yaml says the same): a small GPT on
the built-in corpus, a few minutes on two CPU cores, offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid
from zoo.data.corpus_split import CorpusConfig
from zoo.models.gpt import GPTModelConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig

SOURCES = ("synthetic", "wikiextractor", "text", "wikitext")


@dataclass
class GPTDataConfig(CorpusConfig):
    source: str = field(
        default="synthetic",
        metadata={
            "help": "synthetic (built in, no files) | wikiextractor (a folder of wiki_NN files) | "
            "text (plain UTF-8 files, documents separated by blank lines) | wikitext (WikiText "
            "files, detokenized)"
        },
    )
    unk_below: int = field(
        default=0,
        metadata={
            "help": "words seen fewer than this many times in the training text are written <unk> "
            "in every split, as WikiText built its files (it used 3; zoo.data.rare_words); 0 = "
            "the text as it is"
        },
    )
    tokenizer: str = field(
        default="",
        metadata={
            "help": "an existing byte-level BPE: a tokenizer.json, a folder with GPT-2's "
            "vocab.json and merges.txt, or a zoo run ('' = train one on the training text; it is "
            "saved in the run and inside every checkpoint)"
        },
    )
    vocab_size: int = field(
        default=50257, metadata={"help": "byte-level BPE vocabulary to train (GPT-2: 50,257)"}
    )
    context: int = field(default=1024, metadata={"help": "tokens per training block (at most model.max_len)"})
    batch_size: int = field(default=8, metadata={"help": "blocks per micro-batch, per rank"})
    eval_batch_size: int = field(
        default=16, metadata={"resume": "may change", "help": "windows per evaluation batch"}
    )
    eval_limit: int = field(
        default=0,
        metadata={
            "resume": "may change",
            "help": "validation during training: score the first N tokens of the held-out text (0 = all)",
        },
    )


@dataclass
class GPTEvalConfig:
    stride: int = field(
        default=0,
        metadata={
            "resume": "may change",
            "help": "sliding-window perplexity: tokens the window advances; each window scores "
            "only its last `stride` tokens, after context - stride tokens of context "
            "(0 = context / 2)",
        },
    )


def _default_model() -> GPTModelConfig:
    return GPTModelConfig(num_layers=4, dim=128, num_heads=4, max_len=128, dropout=0.0, attn_dropout=0.0)


def _default_data() -> GPTDataConfig:
    return GPTDataConfig(vocab_size=1024, context=128, batch_size=16, wikitext="", eval_limit=0)


def _default_train() -> TrainConfig:
    return TrainConfig(
        out_dir="runs/gpt-default",
        max_steps=1200,
        log_every=50,
        eval_every=400,
        best_metric="ppl",
        best_mode="min",
        threads=1,
        clip_norm=1.0,
    )


@dataclass
class GPTConfig(RunConfig):
    """The whole recipe; the defaults are the embedded default."""

    model: GPTModelConfig = field(default_factory=_default_model)
    data: GPTDataConfig = field(default_factory=_default_data)
    eval: GPTEvalConfig = field(default_factory=GPTEvalConfig)
    train: TrainConfig = field(default_factory=_default_train)
    optim: OptimConfig = field(
        default_factory=lambda: OptimConfig(
            name="adamw", lr=1e-3, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1
        )
    )
    schedule: ScheduleConfig = field(
        default_factory=lambda: ScheduleConfig(name="cosine", warmup_steps=100, min_lr_ratio=0.1)
    )

    def check(self) -> None:
        d, model = self.data, self.model.resolved()
        if d.source not in SOURCES:
            raise Invalid("data.source", f"must be one of {', '.join(SOURCES)}, not {d.source!r}")
        if not 2 <= d.context <= model.max_len:
            raise Invalid("data.context", f"must be 2..model.max_len ({model.max_len}), not {d.context}")
        if self.eval.stride < 0 or self.eval.stride > d.context:
            raise Invalid("eval.stride", f"must be 0..data.context ({d.context}), not {self.eval.stride}")
        for key in ("batch_size", "eval_batch_size", "vocab_size"):
            if getattr(d, key) < 1:
                raise Invalid(f"data.{key}", f"must be at least 1, not {getattr(d, key)}")
