"""Configuration of the translation task (the `data` section; the recipe's top level joins it
with the model and runner sections)."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import OmegaConf

from zoo.config import Invalid
from zoo.decode.config import DecodeConfig
from zoo.models import ModelConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig


def paper_peak_lr(dim: int, warmup_steps: int) -> float:
    """The peak of the paper's eq. 3, lr = d^-0.5 min(step^-0.5, step warmup^-1.5), reached at
    step == warmup. Recipes write `optim.lr: ${paper_peak_lr:${model.dim},${schedule.warmup_steps}}`
    so that `--model.dim=1024` trains at the rate the paper gives a 1024-wide model."""
    return dim**-0.5 * warmup_steps**-0.5


OmegaConf.register_resolver("paper_peak_lr", paper_peak_lr, replace=True)


@dataclass
class DataConfig:
    source: str = field(
        default="synthetic",
        metadata={"help": "corpus: synthetic (built in, no download) | multi30k | wmt14 | files"},
    )
    data_dir: str = field(
        default="",
        metadata={"resume": "may change", "help": "folder holding multi30k/ and wmt14/ ('' = $ZOO_DATA_DIR)"},
    )
    path: str = field(
        default="",
        metadata={
            "resume": "may change",
            "help": "files: the folder with SPLIT.LANG or SPLIT.LANG.gz files (relative paths are "
            "taken from data_dir)",
        },
    )
    src_lang: str = field(default="en", metadata={"help": "source language suffix"})
    tgt_lang: str = field(default="de", metadata={"help": "target language suffix"})
    train_split: str = field(default="", metadata={"help": "training split name ('' = the source's: train)"})
    valid_split: str = field(
        default="", metadata={"help": "validation split ('' = valid; multi30k: val; wmt14: newstest2013)"}
    )
    test_split: str = field(
        default="",
        metadata={"help": "test split ('' = test; multi30k: test_2016_flickr; wmt14: newstest2014)"},
    )
    synthetic_seed: int = field(
        default=0, metadata={"help": "synthetic: seed of the generated corpus (independent of train.seed)"}
    )
    synthetic_train: int = field(default=20_000, metadata={"help": "synthetic: training pairs"})
    synthetic_valid: int = field(default=500, metadata={"help": "synthetic: validation pairs"})
    synthetic_test: int = field(default=500, metadata={"help": "synthetic: test pairs"})
    vocab_size: int = field(
        default=2000,
        metadata={
            "help": "joint source-target subword vocabulary size (the paper: about 37000 BPE for WMT14)"
        },
    )
    spm_model_type: str = field(
        default="unigram", metadata={"help": "SentencePiece model: unigram | bpe (the paper: bpe)"}
    )
    spm_character_coverage: float = field(
        default=1.0,
        metadata={"help": "fraction of characters the vocabulary covers; rarer ones become <unk>"},
    )
    spm_max_sentences: int = field(
        default=2_000_000,
        metadata={"help": "train the vocabulary on a random sample of this many sentences (0 = all)"},
    )
    tokenizer: str = field(
        default="",
        metadata={
            "help": "an existing spm.model to use ('' = OUT_DIR/spm.model, trained on the training "
            "split if absent)"
        },
    )
    max_tokens: int = field(
        default=4096,
        metadata={"help": "tokens per micro-batch: batch size x longest padded sequence, per rank"},
    )
    tokens_per_step: int = field(
        default=0,
        metadata={
            "help": "tokens per optimizer step on each side (the paper: 25000); the run's "
            "micro-batches per step follow from max_tokens and the number of ranks, in place of "
            "train.grad_accum (0 = train.grad_accum)"
        },
    )
    max_len: int = field(
        default=256,
        metadata={
            "help": "drop training pairs with more subword tokens than this on either side (EOS counted)"
        },
    )
    max_words: int = field(
        default=250,
        metadata={
            "help": "drop training pairs with more words than this on either side, before "
            "tokenization (0 = no limit)"
        },
    )


def _demo_model() -> ModelConfig:
    return ModelConfig(
        encoder_layers=2, decoder_layers=2, dim=128, ffn_dim=512, num_heads=4, dropout=0.1, max_len=256
    )


def _demo_train() -> TrainConfig:
    return TrainConfig(
        out_dir="runs/translation-demo",
        max_steps=600,
        log_every=50,
        eval_every=200,
        save_every=200,
        clip_norm=1.0,
        best_metric="bleu",
    )


@dataclass
class TranslationConfig(RunConfig):
    """The whole recipe. The defaults are the embedded demo (configs/translation/demo.yaml)."""

    model: ModelConfig = field(default_factory=_demo_model)
    data: DataConfig = field(default_factory=DataConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    label_smoothing: float = field(default=0.1, metadata={"help": "the paper's eps_ls"})
    train: TrainConfig = field(default_factory=_demo_train)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(name="adam", lr=1e-3))
    schedule: ScheduleConfig = field(
        default_factory=lambda: ScheduleConfig(name="inverse_sqrt", warmup_steps=300)
    )

    def check(self) -> None:
        # Training pairs must fit the position table the model is built with.
        if not 1 <= self.data.max_len <= self.model.max_len:
            raise Invalid(
                "data.max_len",
                f"must be between 1 and model.max_len ({self.model.max_len}), not {self.data.max_len}",
            )
