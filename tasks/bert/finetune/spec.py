"""BERT fine-tuning as the shared verbs see it (zoo.verbs): train, evaluate (classify: accuracy,
and F1 and MCC for two labels; tag: conlleval chunk F1 overall and per type; span: SQuAD exact
match and F1), predict (a sentence or `a<TAB>b` -> label and probability; a line
of words -> its tags; `question<TAB>passage` -> the answer and its score, or with --n_best the
n best), attention (every layer and head on the first input; with none, the held-out sample of
the run's head), export (the Hugging Face BertForSequenceClassification,
BertForTokenClassification or BertForQuestionAnswering directory, or ONNX), average. Evaluate and
predict read several runs as one with `--ensemble RUN2:RUN3` (mean probabilities). One spec serves the
three heads: what differs is picked by the run's `head` (tasks.bert.finetune.heads).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

from tasks.bert.data import TOKENIZER_FILE
from tasks.bert.finetune import heads
from tasks.bert.finetune.config import HEADS, FinetuneConfig
from tasks.bert.finetune.examples import builtin_set
from tasks.bert.finetune.foreign import ARCHITECTURES, hf_head_of, read_hf_finetuned, recipe_for
from tasks.bert.finetune.splits import describe, read_split
from tasks.bert.finetune.task import Encoder, FinetuneTask, rebuild
from tasks.bert.inference import attention_weights
from zoo.config import Invalid, UserError
from zoo.convert.hf_bert_heads import LoadedBertHead, write_hf_head_directory
from zoo.convert.onnx.export import export_bert
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert_heads import BertHeadEnsemble
from zoo.plot import plot_self_attention
from zoo.train import FitResult, Trained
from zoo.verbs import Evaluation, Loaded, TaskSpec, Unsupported, VerbOptions

DEFAULT_RECIPE = Path(__file__).resolve().parents[3] / "configs" / "bert" / "finetune_default.yaml"
NOT_PUBLISHED = (
    " (held-out articles of SQuAD's dev set, trained on its other articles: not comparable with "
    "published SQuAD dev numbers)"
)
NEXT_STEPS = """
Next:
  python -m zoo evaluate bert_finetune {run} --split test
  printf "{sample}\\n" | python -m zoo predict bert_finetune {run}
  python -m zoo export bert_finetune {run} --output OUT_DIR   # a Hugging Face {architecture} directory
The other heads offline: python -m zoo train bert_finetune --head=tag (or --head=span)
Real data (a data directory holding sst2/, conll2000/, squad-v1.1/, as ../shared/data does):
  python -m zoo train bert_finetune --config configs/bert/sst2.yaml --data.data_dir=DATA"""


@dataclass
class FinetuneOptions(VerbOptions):
    """The shared options, plus the recipe a Hugging Face fine-tuned directory is scored by."""

    recipe: str = field(
        default="",
        metadata={
            "help": "a Hugging Face fine-tuned directory as RUN: the recipe whose data evaluate scores "
            "and whose lengths (max_seq_length, doc_stride) evaluate and predict cut inputs to, e.g. "
            "configs/bert/sst2.yaml ('' = the head's built-in set; a zoo run reads its own recipe)"
        },
    )
    n_best: int = field(
        default=1,
        metadata={
            "help": "predict, span: the best answers of each question, best first, one answer<TAB>score "
            "line each (--json: a list of records, as Hugging Face's pipeline with top_k); at most the "
            "run's decode.n_best, the answers decoding keeps"
        },
    )

    chunks: bool = field(
        default=False,
        metadata={
            "help": "predict, tag: the chunks the tags decode to (conlleval's rules), as `[NP the dog] "
            "[VP ran]` (--json: a list of {type, text, start, end}, word positions)"
        },
    )

    def check(self) -> None:
        super().check()
        if self.n_best < 1:
            raise Invalid("n_best", f"must be at least 1, not {self.n_best}")


@dataclass
class LoadedFinetune(Loaded):
    """The model with its tokenizer, encoder description (labels included) and recipe; `foreign`:
    read from a Hugging Face directory, with `recipe` naming its data or the built-in set's."""

    tokenizer: WordPieceTokenizer
    encoder: Encoder
    cfg: FinetuneConfig
    foreign: bool = False

    def outputs(self, examples: list, batch_size: int, n_best: int = 1) -> tuple[list, list]:
        """(inputs, predictions) of `examples`, one prediction per example (span: its `n_best`
        best answers)."""
        encoded = heads.encode(self.cfg, examples, self.tokenizer, self.encoder.labels)
        outputs = heads.run(self.model, encoded, batch_size or self.cfg.data.eval_batch_size)
        return encoded, heads.predict(self.cfg, outputs, encoded, examples, self.encoder.labels, n_best)


def sample_input(head: str, columns: int = 1) -> str:
    """The first held-out example of the built-in set, as predict reads it; for a model of two
    text `columns` (a pair classifier), its first two sentences, a tab between."""
    examples = builtin_set(head, [1, 1, 1], 0, "valid")
    example = examples[0]
    if head == "classify":
        return "\t".join(e.texts[0] for e in examples[:columns])
    if head == "tag":
        return " ".join(example.words)
    return f"{example.question}\t{example.context}"


def _member(member: Trained, run: Trained, tokenizer: bytes, encoder: Encoder) -> nn.Module:
    """An ensemble member's model: it must read RUN's inputs (`tokenizer`, RUN's serialised) and
    answer in RUN's labels."""
    model, own_tokenizer, own_encoder = rebuild(member)
    differs = (
        "another head" if member.cfg.head != run.cfg.head
        else "other labels" if own_encoder.labels != encoder.labels
        else "another tokenizer" if own_tokenizer.to_bytes() != tokenizer
        else ""
    )  # fmt: skip
    if differs:
        raise UserError(f"--ensemble: {member.path} was trained with {differs} than {run.path}")
    return model


def _others(loaded: LoadedFinetune) -> str:
    members = loaded.model.members if isinstance(loaded.model, BertHeadEnsemble) else [loaded.model]
    return f" and {len(members) - 1} more, an ensemble" if len(members) > 1 else ""


def _check_n_best(cfg: FinetuneConfig, n_best: int) -> None:
    if n_best > 1 and cfg.head != "span":
        raise UserError(f"--n_best {n_best}: n-best answers are for a span model; this one is a {cfg.head}")
    if n_best > cfg.decode.n_best:
        raise UserError(
            f"--n_best {n_best}: more than the {cfg.decode.n_best} answers a question that the run's "
            "decoding keeps (decode.n_best)"
        )


def _one_model(loaded: LoadedFinetune, verb: str) -> None:
    if isinstance(loaded.model, BertHeadEnsemble):
        raise Unsupported(f"bert_finetune: {verb} one model; drop --ensemble")


class FinetuneSpec(TaskSpec):
    name = "bert_finetune"
    description = "BERT fine-tuned: classify sentences, tag words (B-I-O), or answer questions (spans)"
    config = FinetuneConfig
    options = FinetuneOptions
    default_recipe = str(DEFAULT_RECIPE) if DEFAULT_RECIPE.is_file() else None
    export_formats = ("hf", "onnx")
    int8 = True
    ensemble = True  # evaluate and predict; attention and export draw or write one model

    def runner_task(self, cfg: FinetuneConfig) -> FinetuneTask:
        return FinetuneTask(cfg)

    def after_training(self, cfg: FinetuneConfig, task: FinetuneTask, result: FitResult) -> None:
        print(
            f"valid ({cfg.head}; {describe(cfg, 'valid')}: {len(task.valid_examples):,} examples): "
            f"{heads.summary(cfg.head, result.metrics)} after {result.step} steps (run: {result.run_dir})"
        )
        sample = sample_input(cfg.head, len(cfg.data.text_columns)).replace("\t", "\\t")
        print(NEXT_STEPS.format(run=result.run_dir, sample=sample, architecture=ARCHITECTURES[cfg.head]))

    def load(self, trained: list[Trained[FinetuneConfig]], options: VerbOptions) -> LoadedFinetune:
        """The model; with several runs (--ensemble) their heads as one, mean probabilities
        (zoo.models.bert_heads.BertHeadEnsemble), reading RUN's tokenizer and encoding."""
        run = trained[0]
        model, tokenizer, encoder = rebuild(run)
        if len(trained) > 1:
            serialised = tokenizer.to_bytes()
            model = BertHeadEnsemble([model, *(_member(m, run, serialised, encoder) for m in trained[1:])])
        precision = options.precision or run.cfg.train.precision
        return LoadedFinetune(
            model.to(torch.device(options.device)), run, precision, tokenizer, encoder, run.cfg
        )

    def load_foreign(self, options: FinetuneOptions) -> LoadedFinetune | None:
        """RUN as a Hugging Face fine-tuned directory (foreign.py); None for a zoo run."""
        directory = Path(options.run)
        head = hf_head_of(directory) if directory.is_dir() else None
        if head is None:
            if options.recipe:
                raise UserError(f"--recipe is for a Hugging Face directory; {options.run} is a zoo run")
            return None
        if options.ensemble:
            raise Unsupported("bert_finetune: --ensemble reads zoo runs, not Hugging Face directories")
        cfg = recipe_for(head, options.recipe, options.data_dir)
        hf, encoder = read_hf_finetuned(directory, head)
        positions = encoder.config.max_len
        if cfg.data.max_seq_length > positions:  # windows longer than the position table
            if options.recipe:
                raise UserError(
                    f"--recipe {options.recipe}: data.max_seq_length {cfg.data.max_seq_length} is more "
                    f"than the {positions} positions of {directory}"
                )
            cfg.data.max_seq_length = positions
        trained = Trained(cfg, {}, {}, directory, directory, 0, False)
        model = hf.model.to(torch.device(options.device))
        return LoadedFinetune(model, trained, options.precision or "fp32", hf.tokenizer, encoder, cfg, True)

    def calibration_examples(self, loaded: LoadedFinetune, options: VerbOptions) -> list:
        return read_split(loaded.cfg, "train")

    def calibrate(self, loaded: LoadedFinetune, examples: list, options: VerbOptions) -> None:
        loaded.outputs(examples, options.batch_size)

    def evaluate(self, loaded: LoadedFinetune, options: FinetuneOptions) -> Evaluation:
        if loaded.foreign and not options.recipe:
            raise UserError(
                f"{options.run}: a Hugging Face model has no data of its own: name a recipe, e.g. "
                "--recipe configs/bert/sst2.yaml --data_dir DATA"
            )
        cfg, labels = loaded.cfg, loaded.encoder.labels
        examples = read_split(cfg, options.split, labels)
        examples = examples[: options.limit] if options.limit else examples
        _, predictions = loaded.outputs(examples, options.batch_size)
        found = heads.score(cfg.head, predictions, examples, labels)
        caveat = NOT_PUBLISHED if cfg.head == "span" and cfg.data.train else ""
        summary = (
            f"{options.split} ({cfg.head}; {describe(cfg, options.split)}: {len(examples):,} examples): "
            f"{heads.summary(cfg.head, found)}{caveat}  ({loaded.trained.path}{_others(loaded)})"
        )
        if cfg.head == "span":  # the official predictions file: question id -> the best answer's text
            lines = [json.dumps({e.id: p[0][0] for e, p in zip(examples, predictions)}, ensure_ascii=False)]
        else:
            lines = [heads.show(cfg.head, p, as_json=False) for p in predictions]
        return Evaluation({"head": cfg.head, "examples": len(examples), **found}, summary, lines)

    def _examples(self, loaded: LoadedFinetune, lines: list[str], options: VerbOptions) -> list:
        name, columns = options.input or "stdin", len(loaded.cfg.data.text_columns)
        return [
            heads.read_line(loaded.cfg.head, line, f"{name}:{n}", columns) for n, line in enumerate(lines, 1)
        ]

    def predict(self, loaded: LoadedFinetune, lines: list[str], options: FinetuneOptions) -> list:
        """One output per line; a blank line stays blank. Span, with --n_best above 1: the best
        answers, one a line (--json: a list)."""
        _check_n_best(loaded.cfg, options.n_best)
        if options.chunks and loaded.cfg.head != "tag":
            raise UserError(f"--chunks: chunks come from a tag model's tags; this one is a {loaded.cfg.head}")
        keep = [k for k, line in enumerate(lines) if line.strip()]
        examples = self._examples(loaded, [lines[k] for k in keep], options)
        predictions = loaded.outputs(examples, options.batch_size, options.n_best)[1] if examples else []
        outputs: list = [[] if options.json else ""] * len(lines)
        for k, example, prediction in zip(keep, examples, predictions):
            outputs[k] = (
                heads.show_chunks(example.words, prediction, options.json)
                if options.chunks
                else heads.show(loaded.cfg.head, prediction, options.json, options.n_best)
            )
        return outputs

    def attention(self, loaded: LoadedFinetune, lines: list[str], output: Path, options: VerbOptions) -> str:
        """Drawn on the input the model reads: the head's own encoding (its truncation; for a
        passage, the first window)."""
        _one_model(loaded, "attention draws")
        head = loaded.cfg.head
        examples = self._examples(loaded, lines[:1], options)
        encoded = heads.encode(loaded.cfg, examples, loaded.tokenizer, loaded.encoder.labels)
        ids, types = torch.tensor(encoded.ids[:1]), torch.tensor(encoded.types[:1])
        weights = attention_weights(SimpleNamespace(model=loaded.model.bert), ids, types)
        tokens = loaded.tokenizer.convert_ids_to_tokens(encoded.ids[0])
        plot_self_attention(
            weights, tokens, output, title=f"BERT fine-tuned to {head} ({loaded.trained.path})"
        )
        what = {"classify": "input", "tag": "sentence", "span": "question and its passage's first window"}[
            head
        ]
        return f"the self-attention of every layer (rows) and head (columns) on the first {what}"

    def default_input(self, loaded: LoadedFinetune) -> list[str]:
        """The held-out sample of the run's own head (a pair for a pair classifier)."""
        return [sample_input(loaded.cfg.head, len(loaded.cfg.data.text_columns))]

    def export(self, loaded: LoadedFinetune, fmt: str, output: Path, options: VerbOptions) -> None:
        _one_model(loaded, "export writes")
        if fmt == "onnx":
            export_bert(loaded.model, output)
            (output / TOKENIZER_FILE).write_bytes(loaded.tokenizer.to_bytes())
            print("run model.onnx with onnxruntime (the head's logits)", file=sys.stderr)
            return
        head = loaded.cfg.head
        hf = LoadedBertHead(loaded.model, loaded.tokenizer, loaded.encoder.config, loaded.encoder.labels)
        write_hf_head_directory(hf, output)
        print(
            f"load it with transformers.{ARCHITECTURES[head]}.from_pretrained ({HEADS[head]})",
            file=sys.stderr,
        )
