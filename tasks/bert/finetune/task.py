"""BERT fine-tuning as a runner Task: one class for the three heads (`cfg.head`), whose loss
terms, predictions and metrics are tasks.bert.finetune.heads'.

Where the encoder starts (`model.init`): random weights of the recipe's size, with a WordPiece
vocabulary made from the training text (the built-in set's whole words, else trained on the
files); a BERT pretraining run of this project; or a Hugging Face BERT directory or hub name,
its weights checked against model.init_sha256 when the recipe pins them. The encoder's shape,
its tokenizer and the labels travel inside every checkpoint (ENCODER_FILE, TOKENIZER_FILE), so a
run directory is a self-contained model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import torch
from torch import Tensor, nn

from tasks.bert.config import DataConfig as PretrainingData
from tasks.bert.data import TOKENIZER_FILE, tokenizer_for
from tasks.bert.finetune import heads
from tasks.bert.finetune.augment import augmented
from tasks.bert.finetune.config import HEADS, FinetuneConfig, ModelConfig
from tasks.bert.finetune.data import Batch
from tasks.bert.finetune.readers import Example
from tasks.bert.finetune.splits import label_set, read_split
from tasks.bert.hf import load_bert
from zoo.config import UserError
from zoo.convert.hf_bert import LoadedBert, names_hf_model
from zoo.convert.hf_bert_heads import BertHeadModel, build_head
from zoo.convert.hub import is_hub_name
from zoo.convert.pinned import load_pinned_hf_bert
from zoo.data.documents import Document
from zoo.data.seeding import seeded
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig, build_bert
from zoo.models.checks import check_vocabulary
from zoo.train import RunContext, Term, Trained, load_trained
from zoo.train.checkpoint import resolve_checkpoint, save_atomic

ENCODER_FILE = "finetune.json"  # the encoder's shape and the labels, inside every checkpoint
TEACHER_FILE = "teacher_logits.pt"  # distillation: the teacher's logits on the training set


@dataclass
class Encoder:
    """What rebuilds the model without its source: the encoder's config, vocabulary size and
    [PAD] id, and the labels (classify, tag)."""

    config: BertModelConfig
    vocab_size: int
    pad_id: int
    labels: list[str]

    def to_bytes(self) -> bytes:
        return json.dumps({**asdict(self), "config": asdict(self.config)}, indent=1).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Encoder:
        found = json.loads(data)
        return cls(**{**found, "config": BertModelConfig(**found["config"])})

    def build(self, head: str, head_dropout: float) -> BertHeadModel:
        """The head model, freshly initialised."""
        bert = build_bert(self.config, self.vocab_size, self.pad_id)
        return build_head(HEADS[head], bert, self.labels, dropout=head_dropout)


def rebuild(run: Trained[FinetuneConfig]) -> tuple[BertHeadModel, WordPieceTokenizer, Encoder]:
    """A fine-tuned checkpoint's model (eval mode, on the CPU), tokenizer and encoder description."""
    if ENCODER_FILE not in run.artifacts or TOKENIZER_FILE not in run.artifacts:
        raise UserError(f"{run.path}: no {ENCODER_FILE} inside: not a checkpoint of bert_finetune")
    tokenizer = WordPieceTokenizer.from_bytes(
        run.artifacts[TOKENIZER_FILE], source=f"{run.path}: {TOKENIZER_FILE}"
    )
    encoder = Encoder.from_bytes(run.artifacts[ENCODER_FILE])
    check_vocabulary(
        str(run.path), tokenizer.vocab_size, encoder.vocab_size, pad_ids=(tokenizer.pad_id, encoder.pad_id)
    )
    return run.load_into(encoder.build(run.cfg.head, run.cfg.model.head_dropout)), tokenizer, encoder


def teacher_logits(
    cfg: FinetuneConfig, examples: list[Example], labels: list[str], run: RunContext
) -> Tensor:
    """(N, L) float32 logits of cfg.distill.teacher on `examples`, columns in `labels`' order,
    computed on the run's device.

    The teacher reads the text with its own tokenizer and length, so any bert_finetune classifier
    with the same labels can teach (MiniLM teaching the zoo's BERT-Tiny: other vocabularies). The
    logits are kept in the run directory (TEACHER_FILE): a resumed run reads them back.
    """
    # The cache is checked before the teacher's weights are read: a resumed run loads none.
    path, _ = resolve_checkpoint(cfg.distill.teacher)
    stat = path.stat()
    key = {"checkpoint": str(path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns,
           "examples": len(examples)}  # fmt: skip
    cached = run.run_dir / TEACHER_FILE
    if cached.is_file():
        found = torch.load(cached, weights_only=True)
        if found["key"] == key:
            return found["logits"]
    trained = load_trained(path, FinetuneConfig)
    where = f"distill.teacher={cfg.distill.teacher}"
    if trained.cfg.head != "classify":
        raise UserError(f"{where}: a {trained.cfg.head} run; the teacher must classify")
    model, tokenizer, encoder = rebuild(trained)
    if encoder.labels != labels:
        raise UserError(f"{where}: its labels {encoder.labels} are not this run's {labels}")
    print(f"distill: the teacher ({trained.path}) reads the {len(examples):,} training examples once")
    encoded = heads.encode(trained.cfg, examples, tokenizer, labels)
    logits = torch.stack(heads.run(model.to(run.device), encoded, trained.cfg.data.eval_batch_size))
    save_atomic({"key": key, "logits": logits}, cached)  # a crash mid-write leaves no torn file
    return logits


def load_init(model: ModelConfig) -> LoadedBert:
    """The pretrained BERT named by model.init: a Hugging Face directory or hub name (the encoder
    alone is read; its weights checked first when model.init_sha256 pins them), else a BERT
    pretraining run directory or checkpoint of this project. A missing local path (runs/...) is
    named as such, never looked up on the hub."""
    if not Path(model.init).expanduser().exists() and not is_hub_name(model.init):
        raise UserError(
            f"model.init: {model.init}: no such run directory, checkpoint or Hugging Face directory"
        )
    if names_hf_model(model.init):
        return load_pinned_hf_bert(model.init, model.init_sha256, key="model.init_sha256", encoder_only=True)
    if model.init_sha256:
        raise UserError(f"model.init_sha256 pins a Hugging Face directory's weights; {model.init} is not one")
    return load_bert(model.init)


def _texts(head: str, examples: list) -> list[str]:
    if head == "classify":
        return [text for e in examples for text in e.texts]
    if head == "tag":
        return [" ".join(s.words) for s in examples]
    return sorted({e.context for e in examples}) + [e.question for e in examples]


class FinetuneTask:
    """The runner's Task for BERT fine-tuning.

    Args:
        cfg: the whole recipe.
    """

    unit_name = "tokens"

    def __init__(self, cfg: FinetuneConfig) -> None:
        self.cfg = cfg

    def setup(self, run: RunContext) -> None:
        """Examples, the pretrained encoder (or a tokenizer for random weights), labels, inputs."""
        self.run, cfg = run, self.cfg
        train = read_split(cfg, "train")
        self.labels = label_set(cfg, train)
        if cfg.head != "span" and len(self.labels) < 2:
            raise UserError(f"the training set has {len(self.labels)} label(s) {self.labels}: a head needs 2")
        self.valid_examples = read_split(cfg, "valid", self.labels)
        self.pretrained = self._pretrained()
        if self.pretrained is None:
            with run.main_process_first():
                self.tokenizer = self._own_tokenizer(train, run.run_dir)
        else:
            self.tokenizer = self.pretrained.tokenizer
        self.encoder = self._encoder()
        if cfg.data.max_seq_length > self.encoder.config.max_len:
            raise UserError(
                f"data.max_seq_length={cfg.data.max_seq_length} exceeds the encoder's "
                f"{self.encoder.config.max_len} positions"
            )
        if cfg.distill.augment:
            mask = self.tokenizer.convert_ids_to_tokens([self.tokenizer.mask_id])[0]
            train = train + augmented(train, cfg.distill.augment, cfg.train.seed, mask)
        self.train = heads.encode(cfg, train, self.tokenizer, self.labels)
        if cfg.distill.teacher:
            with run.main_process_first():
                self.train.teacher = teacher_logits(cfg, train, self.labels, run)
        self.valid = heads.encode(cfg, self.valid_examples, self.tokenizer, self.labels)

    def _pretrained(self) -> LoadedBert | None:
        # Seeded: a pooler the checkpoint lacks starts fresh, the same in every run.
        if not self.cfg.model.init:
            return None
        with seeded(self.cfg.train.seed):
            return load_init(self.cfg.model)

    def _encoder(self) -> Encoder:
        """The recipe's encoder for random weights; else the pretrained one's shape with the
        recipe's dropouts (fine-tuning's, where pretraining may have used none)."""
        model = self.cfg.model
        if self.pretrained is None:
            shape = BertModelConfig(**{f.name: getattr(model, f.name) for f in fields(BertModelConfig)})
            return Encoder(shape, self.tokenizer.vocab_size, self.tokenizer.pad_id, self.labels)
        bert = self.pretrained.model
        check_vocabulary(
            model.init,
            self.tokenizer.vocab_size,
            bert.vocab_size,
            pad_ids=(self.tokenizer.pad_id, bert.pad_id),
        )
        config = replace(self.pretrained.config, dropout=model.dropout, attn_dropout=model.attn_dropout)
        return Encoder(config, bert.vocab_size, bert.pad_id, self.labels)

    def _own_tokenizer(self, train: list, run_dir: Path) -> WordPieceTokenizer:
        """WordPiece trained on the training text, kept in the run directory (a resumed run reads
        it: training may break ties between merges otherwise in another process)."""
        data = PretrainingData(source="text", vocab_size=self.cfg.data.vocab_size)
        return tokenizer_for(data, run_dir, [Document("", _texts(self.cfg.head, train))])

    def build_model(self) -> BertHeadModel:
        model = self.encoder.build(self.cfg.head, self.cfg.model.head_dropout)
        if self.pretrained is not None:
            # Strict: every key of the encoder (and pooler) filled; the MLM and NSP heads stay behind.
            own = model.bert.state_dict().keys()
            model.bert.load_state_dict(
                {k: v for k, v in self.pretrained.model.state_dict().items() if k in own}
            )
        return model

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Batch]:
        return self.train.train_batches(
            epoch, self.cfg.data.batch_size, seed=self.run.seed, start=start, rank=self.run.rank,
            world_size=self.run.world_size,
        )  # fmt: skip

    def units(self, batch: Batch) -> dict[str, int]:
        return heads.units(self.cfg.head, batch)

    def train_step(self, model: nn.Module, batch: Batch) -> dict[str, Term]:
        return heads.terms(self.cfg.head, heads.forward(model, batch), batch, self.cfg.distill)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        outputs = heads.run(model, self.valid, self.cfg.data.eval_batch_size)
        predictions = heads.predict(self.cfg, outputs, self.valid, self.valid_examples, self.labels)
        return heads.score(self.cfg.head, predictions, self.valid_examples, self.labels)

    def artifacts(self) -> dict[str, bytes]:
        return {TOKENIZER_FILE: self.tokenizer.to_bytes(), ENCODER_FILE: self.encoder.to_bytes()}
