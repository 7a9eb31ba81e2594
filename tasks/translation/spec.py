"""The translation task as the shared verbs see it (zoo.verbs): train, evaluate (sacreBLEU and
chrF), predict (alias translate), attention (cross-attention heatmaps), export (CTranslate2, or
ONNX: the encoder and the cached decoder step), average."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tasks.translation.config import DecodeConfig, TranslationConfig
from tasks.translation.data import cut_to_positions, encode_split, load_pairs, split_names
from tasks.translation.task import (
    TOKENIZER_ARTIFACT,
    Sampling,
    TranslationTask,
    build_translation_model,
    score,
    translate_ids,
)
from zoo.config import Invalid, UserError
from zoo.convert.onnx.export import export_translation
from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.decode.prefix import ForcedPrefixes
from zoo.models.seq2seq_ensemble import Seq2SeqEnsemble
from zoo.plot import plot_cross_attention
from zoo.train import FitResult, Trained, evaluation
from zoo.verbs import Evaluation, Loaded, TaskSpec, Unsupported, VerbOptions

QUANTIZATIONS = ("", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
                 "float16", "bfloat16", "float32")  # fmt: skip

NEXT_STEPS = """
Next, real data (the data directory holds multi30k/ as in ../shared/data; set ZOO_DATA_DIR or
data.data_dir):
  python -m zoo train translation --config configs/translation/multi30k.yaml --data.data_dir=../shared/data
  python -m tasks.translation.download --data-dir DATA && \\
    python -m zoo train translation --config configs/translation/wmt14_base.yaml --data.data_dir=DATA
Evaluate, translate, draw, export a run directory:
  python -m zoo evaluate translation {run} --split test
  echo "A man is riding a bike." | python -m zoo translate translation {run}
  echo "A man is riding a bike." | python -m zoo attention translation {run} --output attention.png
  python -m zoo export translation {run} --format ctranslate2 --output {run}/ct2"""


@dataclass
class TranslationOptions(VerbOptions):
    """The shared options, plus decoding and the CTranslate2 export's weight type."""

    beam_size: int = field(default=0, metadata={"help": "beam width (0 = the recipe's decode.beam_size)"})
    alpha: float | None = field(default=None, metadata={"help": "length penalty (default: the recipe's)"})
    patience: float | None = field(
        default=None, metadata={"help": "beam search's patience (see decode.patience; default: the recipe's)"}
    )
    max_tokens: int = field(
        default=0, metadata={"help": "source tokens per decoding batch (0 = the recipe's)"}
    )
    n_best: int = field(
        default=1,
        metadata={"help": "translate: hypotheses a line, best first, one line each (--json: with scores)"},
    )
    target_prefix: bool = field(
        default=False,
        metadata={"help": "translate: lines are SOURCE<TAB>PREFIX; each translation starts with its PREFIX"},
    )
    do_sample: bool = field(
        default=False, metadata={"help": "translate: sample each translation instead of searching"}
    )
    temperature: float = field(default=1.0, metadata={"help": "sampling: divides the log-probabilities"})
    top_k: int = field(default=0, metadata={"help": "sampling: only the k most probable ids (0 = all)"})
    top_p: float = field(default=1.0, metadata={"help": "sampling: nucleus mass (1.0 = all)"})
    seed: int = field(default=0, metadata={"help": "sampling: the seed"})
    truncate: bool = field(
        default=False,
        metadata={
            "help": "translate only the beginning of lines longer than the model's position table "
            "(model.max_len), with a notice; without it such a line is an error"
        },
    )
    quantization: str = field(
        default="",
        metadata={"help": f"export: CTranslate2 weight type on disk ({' | '.join(QUANTIZATIONS[1:])})"},
    )

    def check(self) -> None:
        super().check()
        if self.beam_size < 0:
            raise Invalid("beam_size", f"must be at least 0 (0 = the recipe's), not {self.beam_size}")
        if self.patience is not None and self.patience < 0:
            raise Invalid(
                "patience", f"must be at least 0 (0 = the exact stopping rule), not {self.patience}"
            )
        if self.quantization not in QUANTIZATIONS:
            raise Invalid("quantization", f"must be one of {', '.join(QUANTIZATIONS[1:])}")
        if self.batch_size:
            raise Invalid("batch_size", "translation batches by source tokens: use --max_tokens")
        if self.n_best < 1:
            raise Invalid("n_best", f"must be at least 1, not {self.n_best}")
        self._check_sampling()

    def _check_sampling(self) -> None:
        if not self.temperature > 0:
            raise Invalid("temperature", f"must be positive, not {self.temperature}")
        if self.top_k < 0:
            raise Invalid("top_k", f"must be at least 0, not {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise Invalid("top_p", f"must be in (0, 1], not {self.top_p}")
        if self.do_sample and (self.beam_size > 1 or self.n_best > 1):
            raise Invalid("do_sample", "draws one translation a line: leave beam_size and n_best out")

    def sampling(self) -> Sampling | None:
        """The sampling settings, None when searching."""
        if not self.do_sample:
            return None
        return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, seed=self.seed)


@dataclass
class Translator(Loaded):
    tokenizer: SentencePieceTokenizer
    decode: DecodeConfig  # the recipe's decoding with the options' changes (a copy: config is data)
    max_tokens: int
    sampling: Sampling | None = None  # --do_sample's settings: sample instead of searching

    def translate(
        self, sources: list[list[int]], n_best: int = 0, prefixes: list[list[int]] | None = None
    ) -> list:
        """translate_ids with the run's decoding: the best ids of each source (or a sample), or
        its n_best best hypotheses with their scores; each beginning with its `prefixes` ids."""
        forced = ForcedPrefixes(prefixes, self.tokenizer.vocab_size) if prefixes else None
        return translate_ids(self.model, sources, self.decode, beam_size=self.decode.beam_size,
                             max_tokens=self.max_tokens, n_best=n_best, sampling=self.sampling,
                             prefixes=forced)  # fmt: skip


def fit_sources(sources: list[list[int]], positions: int, name: str, *, truncate: bool) -> list[list[int]]:
    """Source ids that fit the model's `positions` (EOS included): an error naming the first
    line that does not, or, with `truncate`, those lines cut with a notice on stderr."""
    fitted, cut = cut_to_positions(sources, positions)
    if not cut:
        return sources
    lines = ", ".join(str(i + 1) for i in cut[:10]) + (" ..." if len(cut) > 10 else "")
    if not truncate:
        first = cut[0]
        raise UserError(
            f"{name}:{first + 1}: {len(sources[first])} subword tokens, more than the "
            f"{positions - 1} the model takes (model.max_len {positions}, one for EOS); "
            f"{len(cut)} line(s) too long ({lines}): split them, or pass --truncate"
        )
    print(
        f"note: {name}: {len(cut)} line(s) cut to their first {positions - 1} subword tokens "
        f"(model.max_len {positions}): lines {lines}",
        file=sys.stderr,
    )
    return fitted


def tokenizer_of(trained: Trained) -> SentencePieceTokenizer:
    """The vocabulary saved inside the checkpoint (runs older than artifacts: RUN/spm.model)."""
    if TOKENIZER_ARTIFACT in trained.artifacts:
        origin = f"{TOKENIZER_ARTIFACT} inside {trained.path}"
        return SentencePieceTokenizer(trained.artifacts[TOKENIZER_ARTIFACT], origin=origin)
    return SentencePieceTokenizer.load(trained.run_dir / TOKENIZER_ARTIFACT)


def _member(member: Trained, run: Trained, tokenizer: SentencePieceTokenizer) -> nn.Module:
    """A run's model, which must read and write RUN's vocabulary to join its ensemble."""
    if member is not run and tokenizer_of(member).model != tokenizer.model:
        raise UserError(f"--ensemble: {member.path} was trained with another vocabulary than {run.path}")
    return member.load_into(build_translation_model(member.cfg, tokenizer))


def _split_prefixes(lines: list[str]) -> tuple[list[str], list[str]]:
    """SOURCE<TAB>PREFIX lines -> the sources and the prefixes (a line without a TAB: none)."""
    pairs = [line.split("\t", 1) if "\t" in line else [line, ""] for line in lines]
    return [source for source, _ in pairs], [prefix for _, prefix in pairs]


def _others(loaded: Translator) -> str:
    if isinstance(loaded.model, Seq2SeqEnsemble):
        return f" and {len(loaded.model.members) - 1} more, an ensemble"
    return ""


def _one_model(loaded: Translator, verb: str) -> None:
    if isinstance(loaded.model, Seq2SeqEnsemble):
        raise Unsupported(f"translation: {verb} one model; drop --ensemble")


class TranslationSpec(TaskSpec):
    name = "translation"
    description = "the paper's encoder-decoder Transformer, scored with sacreBLEU"
    config = TranslationConfig
    options = TranslationOptions
    predict_alias = "translate"
    export_formats = ("ctranslate2", "onnx")
    int8 = True
    ensemble = True  # evaluate and predict; attention and export draw or write one model

    def runner_task(self, cfg: TranslationConfig) -> TranslationTask:
        return TranslationTask(cfg)

    def after_training(self, cfg: TranslationConfig, task: TranslationTask, result: FitResult) -> None:
        with evaluation(result.model, cfg.train.precision) as model:
            test = task.evaluate(model, "test", beam_size=cfg.decode.beam_size)
        (result.run_dir / "test.json").write_text(json.dumps({"step": result.step, **test}, indent=2) + "\n")
        print(
            f"\ntest ({cfg.data.source}, {len(task.data.test)} sentences, beam {cfg.decode.beam_size}, "
            f"alpha {cfg.decode.alpha}): sacreBLEU {test['bleu']:.2f}, chrF {test['chrf']:.2f}, "
            f"perplexity {test['ppl']:.2f}"
        )
        print(NEXT_STEPS.format(run=result.run_dir))

    def load(self, trained: list[Trained], options: TranslationOptions) -> Translator:
        """The model; with several runs (--ensemble) their mean next-token probabilities at every
        step (zoo.models.seq2seq_ensemble), RUN's tokenizer, decoding and batching."""
        run = trained[0]
        cfg = run.cfg
        tokenizer = tokenizer_of(run)
        changes = {
            "beam_size": options.beam_size or None,
            "alpha": options.alpha,
            "patience": options.patience,
        }
        decode = dataclasses.replace(cfg.decode, **{k: v for k, v in changes.items() if v is not None})
        models = [_member(member, run, tokenizer) for member in trained]
        model = (models[0] if len(models) == 1 else Seq2SeqEnsemble(models)).to(torch.device(options.device))
        return Translator(
            model, run, options.precision or cfg.train.precision, tokenizer, decode,
            options.max_tokens or cfg.decode.max_tokens or cfg.data.max_tokens, options.sampling(),
        )  # fmt: skip

    def calibration_examples(
        self, loaded: Translator, options: TranslationOptions
    ) -> Iterable[tuple[str, str]]:
        return load_pairs(loaded.trained.cfg.data, "train")

    def calibrate(
        self, loaded: Translator, examples: list[tuple[str, str]], options: TranslationOptions
    ) -> None:
        """Teacher-forced forwards of the pairs, in batches of --batch_size (default 64)."""
        truncate = loaded.trained.cfg.model.max_len
        pairs = encode_split("calibration", examples, loaded.tokenizer, truncate=truncate).pairs
        size, device = options.batch_size or 64, next(loaded.model.parameters()).device
        for start in range(0, len(pairs), size):
            batch = pairs.collate(range(start, min(start + size, len(pairs))), SPECIAL_IDS)
            loaded.model(batch.src.to(device), batch.tgt_in.to(device))

    def evaluate(self, loaded: Translator, options: TranslationOptions) -> Evaluation:
        if loaded.sampling is not None:  # its record would stand beside the search's as a score
            raise Invalid("do_sample", "evaluate scores the search; sample with translate")
        cfg = loaded.trained.cfg
        pairs = list(load_pairs(cfg.data, options.split))
        pairs = pairs[: options.limit] if options.limit else pairs
        name = split_names(cfg.data)[options.split]
        split = encode_split(name, pairs, loaded.tokenizer, truncate=cfg.model.max_len, keep_text=True)
        hyps = loaded.tokenizer.decode_batch(loaded.translate(split.pairs.src))
        decode = loaded.decode
        metrics = {"sentences": len(hyps), "beam_size": decode.beam_size, "alpha": decode.alpha,
                   "patience": decode.patience, **score(hyps, split.references)}  # fmt: skip
        summary = (
            f"{name}: BLEU {metrics['bleu']:.2f}  chrF {metrics['chrf']:.2f}  ({len(hyps)} sentences, "
            f"beam {decode.beam_size}, alpha {decode.alpha}, {loaded.trained.path}{_others(loaded)})\n"
            f"  {metrics['bleu_signature']}\n  {metrics['chrf_signature']}"
        )
        return Evaluation(metrics, summary, hyps)

    def _sources(self, loaded: Translator, lines: list[str], options: TranslationOptions) -> list[list[int]]:
        ids = loaded.tokenizer.encode_batch(lines)
        return fit_sources(ids, loaded.model.max_len, options.input or "stdin", truncate=options.truncate)

    def predict(
        self, loaded: Translator, lines: list[str], options: TranslationOptions
    ) -> list[str | list[dict]]:
        """One translation a line; with --n_best n > 1, n lines a line, best first (--json: a list of
        {"translation", "score"}, the score beam search's length-normalised log-probability)."""
        prefixes = None
        if options.target_prefix:
            lines, prefix_texts = _split_prefixes(lines)
            prefixes = loaded.tokenizer.encode_batch(prefix_texts)
        sources = self._sources(loaded, lines, options)
        if options.n_best == 1:
            return loaded.tokenizer.decode_batch(loaded.translate(sources, prefixes=prefixes))
        if options.n_best > loaded.decode.beam_size:
            raise Invalid(
                "n_best",
                f"{options.n_best} is more than the beam ({loaded.decode.beam_size}): raise --beam_size",
            )
        nbest = loaded.translate(sources, n_best=options.n_best, prefixes=prefixes)
        outputs: list[str | list[dict]] = []
        for hypotheses in nbest:
            texts = loaded.tokenizer.decode_batch([ids for ids, _ in hypotheses])
            scored = [{"translation": t, "score": score} for t, (_, score) in zip(texts, hypotheses)]
            outputs.append(scored if options.json else "\n".join(texts))
        return outputs

    def attention(
        self, loaded: Translator, lines: list[str], output: Path, options: TranslationOptions
    ) -> str:
        _one_model(loaded, "attention draws")
        source = self._sources(loaded, lines[:1], options)[0]
        hyp = loaded.translate([source])[0]
        tok, device = loaded.tokenizer, next(loaded.model.parameters()).device
        src, tgt = source + [SPECIAL_IDS.eos], [SPECIAL_IDS.bos] + hyp
        plot_cross_attention(
            loaded.model, torch.tensor(src, device=device), torch.tensor(tgt, device=device),
            tok.pieces(src), tok.pieces(hyp + [SPECIAL_IDS.eos]), output,
        )  # fmt: skip
        print(tok.decode(hyp))
        return "the cross-attention of the first sentence (rows: its translation, columns: the source)"

    def export(self, loaded: Translator, fmt: str, output: Path, options: TranslationOptions) -> None:
        _one_model(loaded, "export writes")
        if fmt == "onnx":
            if options.quantization:
                raise UserError("--quantization is CTranslate2's: the ONNX graphs hold float32 weights")
            export_translation(loaded.model, output)
            (output / "spm.model").write_bytes(loaded.tokenizer.model)
            print("decode it with zoo.convert.onnx.runtime.OnnxSeq2Seq (ONNX Runtime)", file=sys.stderr)
            return
        from zoo.convert.ctranslate2 import write_ctranslate2  # ctranslate2 is an optional peer

        if loaded.precision == "bf16" and not options.quantization:
            print("note: the weights are written in float32 (--quantization bfloat16 to store bf16)",
                  file=sys.stderr)  # fmt: skip
        write_ctranslate2(loaded.model, loaded.tokenizer, output, quantization=options.quantization)

    def default_input(self, loaded: Loaded) -> list[str]:
        raise Unsupported("translation: give the sentence on stdin or with --input FILE")
