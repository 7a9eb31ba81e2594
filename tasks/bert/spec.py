"""BERT pretraining as the shared verbs see it (zoo.verbs): train (masked LM + next sentence),
evaluate (MLM accuracy and perplexity, NSP accuracy), predict (alias fill-mask), attention
(every layer and head), export (a Hugging Face BertForPreTraining directory, or ONNX), average.

RUN may also be a Hugging Face BERT directory or hub name (`load_foreign`): evaluate, fill-mask,
attention and export read it through zoo.convert.hf_bert.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tasks.bert.config import BertPretrainingConfig, DataConfig
from tasks.bert.data import EVAL_SEED, TOKENIZER_FILE, load_documents, make_examples
from tasks.bert.inference import attention_weights, fill_mask, format_fillers, pair_inputs
from tasks.bert.task import BertTask, score_examples, tokenizer_of
from zoo.config import Invalid, UserError
from zoo.convert.hf_bert import LoadedBert, load_hf_bert, names_hf_model, write_hf_directory
from zoo.convert.onnx.export import export_bert
from zoo.data.documents import Document, read_documents
from zoo.data.paths import resolve_data_dir
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig, build_bert
from zoo.plot import plot_self_attention
from zoo.train import FitResult, Trained
from zoo.verbs import Evaluation, Loaded, TaskSpec, Unsupported, VerbOptions

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "bert" / "default.yaml"
HF_MAX_SEQ_LENGTH = 128  # evaluation examples of a Hugging Face model (BERT's first phase)
NEXT_STEPS = """
Next:
  python -m zoo evaluate bert {run} --split valid     # MLM accuracy/perplexity, NSP accuracy
  echo "the town lies on the banks of the [MASK] ." | python -m zoo fill-mask bert {run}
  python -m zoo export bert {run} --output OUT_DIR    # a Hugging Face BertForPreTraining directory
Real data (the data directory holds enwiki-extract/ and wikitext-2/, as ../shared/data does):
  python -m zoo train bert --config configs/bert/bert_mini.yaml --data.data_dir=DATA
  python -m zoo train bert --config configs/bert/bert_base.yaml --data.data_dir=DATA  # needs GPUs"""


@dataclass
class BertOptions(VerbOptions):
    """The shared options, plus fill-mask's number of fillers and what evaluate builds examples of."""

    top_k: int = field(default=5, metadata={"help": "predict (fill-mask): fillers per [MASK]"})
    wikitext: str = field(
        default="",
        metadata={
            "help": "evaluate: folder under the data directory with WikiText valid.txt/test.txt "
            "('' = the recipe's data.wikitext; wikitext-2 for a Hugging Face model)"
        },
    )
    max_seq_length: int = field(
        default=0,
        metadata={
            "help": f"evaluate: tokens per example (0 = as trained; {HF_MAX_SEQ_LENGTH} for Hugging Face)"
        },
    )

    def check(self) -> None:
        super().check()
        if self.top_k < 1:
            raise Invalid("top_k", f"must be at least 1, not {self.top_k}")
        if self.max_seq_length < 0:
            raise Invalid("max_seq_length", f"must be at least 0 (0 = as trained), not {self.max_seq_length}")


@dataclass
class LoadedBertRun(Loaded):
    """The model with its tokenizer; `recipe` is None for a Hugging Face model."""

    tokenizer: WordPieceTokenizer
    config: BertModelConfig
    recipe: BertPretrainingConfig | None
    source: Path

    def as_hf(self) -> LoadedBert:
        return LoadedBert(self.model, self.tokenizer, self.config, self.source)


class BertSpec(TaskSpec):
    name = "bert"
    description = "BERT pretraining (masked LM + next sentence), scored by MLM and NSP accuracy"
    config = BertPretrainingConfig
    default_recipe = str(DEFAULT_RECIPE) if DEFAULT_RECIPE.is_file() else None
    options = BertOptions
    predict_alias = "fill-mask"
    export_formats = ("hf", "onnx")
    int8 = True

    def runner_task(self, cfg: BertPretrainingConfig) -> BertTask:
        return BertTask(cfg)

    def after_training(self, cfg: BertPretrainingConfig, task: BertTask, result: FitResult) -> None:
        m = result.metrics
        print(
            f"held-out: MLM accuracy {m['mlm_acc']:.2f}%  perplexity {m['mlm_ppl']:.2f}  "
            f"NSP accuracy {m['nsp_acc']:.2f}%  ({int(m['examples']):,} examples, step "
            f"{result.step}, run directory {result.run_dir})"
        )
        print(NEXT_STEPS.format(run=result.run_dir))

    def load(self, trained: list[Trained], options: BertOptions) -> LoadedBertRun:
        (run,) = trained
        tokenizer = tokenizer_of(run.artifacts, run.path)
        model = run.load_into(build_bert(run.cfg.model, tokenizer.vocab_size, tokenizer.pad_id))
        return LoadedBertRun(
            model.to(torch.device(options.device)), run, options.precision or run.cfg.train.precision,
            tokenizer, run.cfg.model, run.cfg, run.path,
        )  # fmt: skip

    def load_foreign(self, options: BertOptions) -> LoadedBertRun | None:
        """RUN as a Hugging Face BERT directory or hub name; None when it is not one (a zoo run,
        for load_trained). Such a model has no run directory: evaluate keeps no record, and the
        attention picture goes to ./attention.png unless --output says otherwise."""
        if not names_hf_model(options.run):
            return None
        hf = load_hf_bert(options.run)
        trained = Trained(BertPretrainingConfig(model=hf.config), {}, {}, hf.source, Path("."), 0, False)
        return LoadedBertRun(
            hf.model.to(torch.device(options.device)), trained, options.precision or "fp32",
            hf.tokenizer, hf.config, None, hf.source,
        )  # fmt: skip

    # evaluate
    def _data(self, loaded: LoadedBertRun, options: BertOptions) -> DataConfig:
        if loaded.recipe is None:
            data = DataConfig(max_seq_length=min(HF_MAX_SEQ_LENGTH, loaded.config.max_len))
        else:
            data = copy.deepcopy(loaded.recipe.data)
        data.data_dir = options.data_dir or data.data_dir
        data.max_seq_length = options.max_seq_length or data.max_seq_length
        data.wikitext = options.wikitext or data.wikitext
        return data

    def _documents(self, loaded: LoadedBertRun, data: DataConfig, split: str) -> tuple[str, list[Document]]:
        """(name, documents) of `split`: valid = the run's held-out documents; test = WikiText's
        test.txt in the data directory (the recipe's data.wikitext or --wikitext), or for the
        built-in corpus without one its test documents. A Hugging Face model reads WikiText's
        valid.txt or test.txt."""
        if split == "train":
            raise Unsupported("bert: --split train is not scored: valid (held-out documents) or test")
        root = resolve_data_dir(data.data_dir)  # a data directory given but missing is named here
        if split == "valid" and loaded.recipe is not None:
            return f"held-out ({data.source})", load_documents(data, "valid")
        wikitext = root / data.wikitext / f"{split}.txt" if root is not None and data.wikitext else None
        if wikitext is not None and wikitext.is_file():
            return f"{data.wikitext} {split}", read_documents([wikitext], "wikitext")[0]
        if loaded.recipe is not None and data.source == "synthetic" and not data.wikitext:
            return "test (synthetic)", load_documents(data, "test")
        where = f"{root / data.wikitext}" if root is not None and data.wikitext else "a data directory"
        raise UserError(
            f"bert: no {split} set: {where} has no {split}.txt "
            "(give --data_dir holding wikitext-2/, or --wikitext FOLDER)"
        )

    def evaluate(self, loaded: LoadedBertRun, options: BertOptions) -> Evaluation:
        data = self._data(loaded, options)
        name, documents = self._documents(loaded, data, options.split)
        examples = make_examples(documents, loaded.tokenizer, data, seed=EVAL_SEED)
        batch_size = options.batch_size or data.eval_batch_size
        m = score_examples(loaded.model, examples, batch_size=batch_size, limit=options.limit)
        summary = (
            f"{name}: MLM accuracy {m['mlm_acc']:.2f}%  perplexity {m['mlm_ppl']:.2f}  "
            f"NSP accuracy {m['nsp_acc']:.2f}%  ({int(m['examples']):,} examples of "
            f"{len(documents):,} documents, {loaded.trained.path})"
        )
        return Evaluation({"set": name, "documents": len(documents), **m}, summary)

    # predict (fill-mask)
    def predict(self, loaded: LoadedBertRun, lines: list[str], options: BertOptions) -> list:
        """Per line, the fillers of each [MASK]: text (today's fill_mask CLI), or with --json the
        pipeline's records (one list, or one list per [MASK] when there are several)."""
        name, outputs = options.input or "stdin", []
        for number, text in enumerate(lines, 1):
            if not text:
                outputs.append([] if options.json else "")
                continue
            try:
                results = fill_mask(loaded, text, options.top_k)
            except UserError as err:
                raise UserError(f"{name}:{number}: {err}") from None
            if options.json:
                outputs.append(results[0] if len(results) == 1 else results)
            else:
                outputs.append(format_fillers(text, results))
        return outputs

    # attention
    def attention(self, loaded: LoadedBertRun, lines: list[str], output: Path, options: BertOptions) -> str:
        text, _, text_b = lines[0].partition("\t")
        ids, types, tokens = pair_inputs(loaded, text.strip(), text_b.strip())
        weights = attention_weights(loaded, ids, types)
        plot_self_attention(weights, tokens, output, title=f"BERT self-attention ({loaded.source.name})")
        pair = "pair" if text_b.strip() else "sentence"
        return f"the self-attention of every layer (rows) and head (columns) on the first {pair}"

    def default_input(self, loaded: Loaded) -> list[str]:
        """The first two sentences of the built-in corpus's first held-out document."""
        data = DataConfig()
        document = load_documents(data, "valid")[0]
        return ["\t".join(document.sentences[:2])]

    # export
    def export(self, loaded: LoadedBertRun, fmt: str, output: Path, options: BertOptions) -> None:
        if fmt == "onnx":
            export_bert(loaded.model, output)
            (output / TOKENIZER_FILE).write_bytes(loaded.tokenizer.to_bytes())
            print("run model.onnx with onnxruntime (hidden states and the pooled state)", file=sys.stderr)
            return
        write_hf_directory(loaded.as_hf(), output)
        print("load it with transformers.BertForPreTraining.from_pretrained", file=sys.stderr)
