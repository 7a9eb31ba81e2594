"""GPT language modelling as the shared verbs see it (zoo.verbs): train, evaluate (perplexity
per token and per word, bits per byte, over a sliding window), predict (alias generate: prompts
to continuations, streamed for one prompt), attention (every layer and head on a prompt),
export (a Hugging Face GPT2LMHeadModel directory, CTranslate2's Generator, or ONNX with the KV
cache as inputs and outputs), average.

RUN may also be a Hugging Face GPT-2 directory or hub name (`load_foreign`).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from tasks.gpt.config import GPTConfig, GPTDataConfig
from tasks.gpt.data import load_texts, token_stream
from tasks.gpt.generation import GenerationOptions, TextStream, prompts_of
from tasks.gpt.perplexity import score_ids, wikitext_text, wikitext_words
from tasks.gpt.task import GPTTask, tokenizer_of
from zoo.blocks import attention_maps
from zoo.config import Invalid, UserError
from zoo.convert.ctranslate2 import write_ctranslate2_gpt
from zoo.convert.hf_bert import names_hf_model
from zoo.convert.hf_gpt2 import load_hf_gpt2, write_hf_directory
from zoo.convert.onnx.export import export_gpt
from zoo.data.bpe import ByteBPETokenizer
from zoo.data.paths import resolve_data_dir
from zoo.decode import GenerationConfig, generate
from zoo.models.checks import check_vocabulary
from zoo.models.gpt import GPTModelConfig, build_gpt
from zoo.plot import plot_self_attention
from zoo.train import FitResult, Trained
from zoo.verbs import Evaluation, Loaded, TaskSpec

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "gpt" / "default.yaml"
# The built-in corpus is lowercase; real text is not.
SAMPLE_PROMPTS = {"synthetic": "the town of"}
SAMPLE_PROMPT = "The town of"
NEXT_STEPS = """
Next:
  python -m zoo evaluate gpt {run} --split valid        # perplexity per token and word, bits per byte
  echo "the town of" | python -m zoo generate gpt {run} --do_sample --top_k=50 --seed=1
  python -m zoo export gpt {run} --format hf --output OUT_DIR   # GPT2LMHeadModel; or --format ctranslate2
Real data (the data directory holds enwiki-extract/ and wikitext-2/, as ../shared/data does):
  python -m zoo train gpt --config configs/gpt/enwiki.yaml --data.data_dir=DATA   # 90 min, 2 CPU cores
  python -m zoo train gpt --config configs/gpt/gpt2_small.yaml --data.data_dir=DATA  # a GPU"""


@dataclass
class GPTOptions(GenerationOptions):
    """The shared options, generation's (GenerationOptions) and what evaluate scores."""

    wikitext: str = field(
        default="",
        metadata={
            "help": "evaluate: folder under the data directory with WikiText valid.txt/test.txt to "
            "score, detokenized ('' = the recipe's data.wikitext for --split test)"
        },
    )
    context: int = field(default=0, metadata={"help": "evaluate: window length (0 = as trained)"})
    stride: int = field(
        default=0,
        metadata={
            "help": "evaluate: tokens the window advances (0 = the recipe's eval.stride, or context / 2 "
            "rounded down, at least 1)"
        },
    )

    def check(self) -> None:
        super().check()
        for key in ("context", "stride"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0, not {getattr(self, key)}")


@dataclass
class LoadedGPT(Loaded):
    """The model with its tokenizer; `recipe` is None for a Hugging Face model."""

    tokenizer: ByteBPETokenizer
    config: GPTModelConfig
    recipe: GPTConfig | None
    source: Path


class GPTSpec(TaskSpec):
    name = "gpt"
    description = "GPT language model (decoder-only), scored by perplexity, sampled with generate"
    config = GPTConfig
    default_recipe = str(DEFAULT_RECIPE) if DEFAULT_RECIPE.is_file() else None
    options = GPTOptions
    predict_alias = "generate"
    export_formats = ("hf", "ctranslate2", "onnx")
    int8 = True

    # train
    def runner_task(self, cfg: GPTConfig) -> GPTTask:
        return GPTTask(cfg)

    def after_training(self, cfg: GPTConfig, task: GPTTask, result: FitResult) -> None:
        m = result.metrics
        print(
            f"held-out: loss {m['loss']:.4f}  perplexity {m['ppl']:.2f} per token  (step {result.step}, "
            f"run directory {result.run_dir})"
        )
        options = GPTOptions(max_new_tokens=40, do_sample=True, top_k=50, seed=0)
        loaded = LoadedGPT(result.model, None, "fp32", task.tokenizer, cfg.model, cfg, result.run_dir)
        with torch.inference_mode():
            (text,) = self.predict(loaded, [SAMPLE_PROMPTS.get(cfg.data.source, SAMPLE_PROMPT)], options)
        print(f"sample (top-k 50, seed 0): {text}")
        print(NEXT_STEPS.format(run=result.run_dir))

    # loading
    def load(self, trained: list[Trained], options: GPTOptions) -> LoadedGPT:
        (run,) = trained
        tokenizer = tokenizer_of(run.artifacts, run.path)
        model = run.load_into(build_gpt(run.cfg.model, tokenizer.vocab_size))
        return LoadedGPT(
            model.to(torch.device(options.device)), run, options.precision or run.cfg.train.precision,
            tokenizer, run.cfg.model.resolved(), run.cfg, run.path,
        )  # fmt: skip

    def load_foreign(self, options: GPTOptions) -> LoadedGPT | None:
        """RUN as a Hugging Face GPT-2 directory or hub name; None when it is not one (a zoo run,
        for load_trained). Such a model has no run directory: evaluate keeps no record."""
        if not names_hf_model(options.run):
            return None
        hf = load_hf_gpt2(options.run)
        tokenizer = ByteBPETokenizer.from_path(hf.directory)
        check_vocabulary(str(hf.directory), tokenizer.vocab_size, hf.vocab_size)
        trained = Trained(GPTConfig(model=hf.config), {}, {}, hf.directory, Path("."), 0, False)
        return LoadedGPT(
            hf.model.to(torch.device(options.device)), trained, options.precision or "fp32",
            tokenizer, hf.config, None, hf.directory,
        )  # fmt: skip

    # evaluate
    def _data(self, loaded: LoadedGPT, options: GPTOptions) -> GPTDataConfig:
        data = copy.deepcopy(loaded.recipe.data) if loaded.recipe is not None else GPTDataConfig(wikitext="")
        data.data_dir = options.data_dir or data.data_dir
        return data

    def _text(self, loaded: LoadedGPT, options: GPTOptions) -> tuple[str, list[int], str, int | None]:
        """(name, ids, text, words) of the split to score: WikiText (--wikitext, or the recipe's
        data.wikitext for test) detokenized, with its word count; else the run's own split."""
        data = self._data(loaded, options)
        folder = options.wikitext or (data.wikitext if options.split == "test" else "")
        if folder:
            root = resolve_data_dir(data.data_dir)
            path = (root / folder if root is not None else Path(folder)) / f"{options.split}.txt"
            if not path.is_file():
                raise UserError(
                    f"gpt: no WikiText {options.split} split at {path} (give --data_dir or --wikitext)"
                )
            text = wikitext_text(path)
            ids = [loaded.tokenizer.eot_id, *loaded.tokenizer.encode(text)]
            return f"{folder} {options.split} (detokenized)", ids, text, wikitext_words(path)
        if loaded.recipe is None:
            raise UserError(
                "gpt: a Hugging Face model is scored on WikiText: give --wikitext FOLDER and --data_dir"
            )
        texts = load_texts(data, options.split)
        ids = [loaded.tokenizer.eot_id, *token_stream(texts, loaded.tokenizer).tolist()]
        # Words of raw text: whitespace-separated, punctuation attached (WikiText's tokenized files
        # split it off, so their count is larger for the same text).
        words = sum(len(text.split()) for text in texts)
        return f"{data.source} {options.split}", ids, "".join(texts), words

    def calibration_examples(self, loaded: LoadedGPT, options: GPTOptions) -> list[str]:
        if loaded.recipe is None:
            raise UserError("gpt: --int8_calibration reads a zoo run's training split, not a foreign model's")
        return load_texts(self._data(loaded, options), "train")

    def calibrate(self, loaded: LoadedGPT, examples: list[str], options: GPTOptions) -> None:
        """Forwards over the documents, cut into windows of the trained context (the tied output
        projection, read as a tensor, is not smoothed: zoo.quantize)."""
        ids = torch.from_numpy(token_stream(examples, loaded.tokenizer)).long()
        context = loaded.recipe.data.context
        whole = len(ids) // context
        for batch in ids[: whole * context].view(whole, context).split(options.batch_size or 8):
            loaded.model(batch)
        if len(ids) % context:
            loaded.model(ids[whole * context :][None])  # the rest, unpadded

    def evaluate(self, loaded: LoadedGPT, options: GPTOptions) -> Evaluation:
        name, ids, text, words = self._text(loaded, options)
        if options.limit:
            ids = ids[: options.limit]
        trained_context = loaded.recipe.data.context if loaded.recipe is not None else loaded.config.max_len
        context = options.context or trained_context
        if context > loaded.config.max_len:
            raise UserError(f"--context {context}: the model has {loaded.config.max_len} positions")
        asked = options.stride or (loaded.recipe.eval.stride if loaded.recipe is not None else 0)
        # Half the window by default, but at least one token: a window of 1 has no half to advance by.
        stride = min(asked or max(1, context // 2), context)
        batch_size = options.batch_size or (loaded.recipe.data.eval_batch_size if loaded.recipe else 8)
        m = score_ids(
            loaded.model, torch.tensor(ids), text=None if options.limit else text,
            words=None if options.limit else words,
            context=context, stride=stride, batch_size=batch_size,
        )  # fmt: skip
        summary = f"{name}: perplexity {m['ppl']:.2f} per token"
        if "word_ppl" in m:
            summary += f", {m['word_ppl']:.2f} per word"
        if "bpb" in m:
            summary += f", {m['bpb']:.4f} bits per byte"
        summary += f" ({m['tokens']:,} tokens, window {context}, stride {stride}; {loaded.source})"
        return Evaluation({"set": name, "context": context, "stride": stride, **m}, summary)

    # predict (generate)
    def predict(self, loaded: LoadedGPT, lines: list[str], options: GPTOptions) -> list[str | list[str]]:
        """Each prompt followed by its continuation (newlines shown as \\n, so one line each;
        --json gives the text as it is). With num_return_sequences n > 1, n lines a prompt (--json:
        a list of n texts)."""
        prompts = prompts_of(loaded, lines, options)
        config = options.generation_config(loaded.tokenizer.eot_id)
        outputs = self._generate(loaded, prompts, config, options.batch_size)
        n = config.num_return_sequences
        texts = [lines[i // n] + self._decode(loaded, out) for i, out in enumerate(outputs)]
        if not options.json:
            texts = [t.replace("\n", "\\n") for t in texts]
        per_prompt = [texts[i : i + n] for i in range(0, len(texts), n)]
        if n == 1:
            return [text for (text,) in per_prompt]
        return per_prompt if options.json else ["\n".join(group) for group in per_prompt]

    def _generate(
        self, loaded: LoadedGPT, prompts: list[list[int]], config: GenerationConfig, batch_size: int
    ) -> list[list[int]]:
        """generate's outputs for `prompts`, in their order, `batch_size` prompts a call (0: all in
        one): a long input file need not fit in memory as one left-padded batch."""
        size = batch_size or len(prompts)
        batches = [prompts[start : start + size] for start in range(0, len(prompts), size)]
        decode = loaded.tokenizer.decode
        return [out for batch in batches for out in generate(loaded.model, batch, config, decode=decode)]

    def stream(
        self, loaded: LoadedGPT, line: str, options: GPTOptions, write: Callable[[str], None]
    ) -> str | None:
        """One prompt's continuation written piece by piece as it is generated (None, not streamed,
        for several continuations)."""
        if options.num_return_sequences > 1:
            return None
        prompts = prompts_of(loaded, [line], options)
        config = options.generation_config(loaded.tokenizer.eot_id)
        write(line)
        on_token = TextStream(loaded.tokenizer, write)
        (out,) = generate(loaded.model, prompts, config, decode=loaded.tokenizer.decode, on_token=on_token)
        on_token.flush()
        return line + self._decode(loaded, out)

    def _decode(self, loaded: LoadedGPT, ids: list[int]) -> str:
        """The continuation's text, without the end-of-text token that ended it."""
        eot = loaded.tokenizer.eot_id
        return loaded.tokenizer.decode(ids[: ids.index(eot)] if eot in ids else ids)

    # attention
    def attention(self, loaded: LoadedGPT, lines: list[str], output: Path, options: GPTOptions) -> str:
        # Nothing is generated: the prompt keeps the whole context, not room for max_new_tokens.
        (prompt,) = prompts_of(loaded, lines[:1], replace(options, max_new_tokens=0))
        device = next(loaded.model.parameters()).device
        with attention_maps(loaded.model) as maps:
            loaded.model(torch.tensor([prompt], device=device))
        layers = range(len(loaded.model.blocks.layers))
        weights = torch.stack([maps[f"blocks.layers.{i}.self_attn"][0][0].float().cpu() for i in layers])
        tokens = [loaded.tokenizer.decode([i]) for i in prompt]
        plot_self_attention(
            weights, tokens, output, title=f"GPT causal self-attention ({loaded.source.name})"
        )
        return "the causal self-attention of every layer (rows) and head (columns) on the first prompt"

    def default_input(self, loaded: Loaded) -> list[str]:
        return ["the town lies on the banks of the river"]

    # export
    def export(self, loaded: LoadedGPT, fmt: str, output: Path, options: GPTOptions) -> None:
        if fmt == "hf":
            write_hf_directory(loaded.model, loaded.config, loaded.tokenizer, output)
            print("load it with transformers.GPT2LMHeadModel.from_pretrained", file=sys.stderr)
            return
        if fmt == "onnx":
            export_gpt(loaded.model, output)
            (output / "tokenizer.json").write_bytes(loaded.tokenizer.to_bytes())
            print(
                "run model.onnx with onnxruntime (ids and past keys/values in, logits out)", file=sys.stderr
            )
            return
        write_ctranslate2_gpt(loaded.model, loaded.tokenizer.tokens(), output, eot_id=loaded.tokenizer.eot_id)
        print("load it with ctranslate2.Generator", file=sys.stderr)
