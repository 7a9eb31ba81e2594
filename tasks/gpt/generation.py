"""What `generate` (predict) asks on the command line, turned into zoo.decode's generation
settings; prompts encoded and fitted to the context; text streamed as tokens arrive."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zoo.config import Invalid
from zoo.data.bpe import ByteBPETokenizer
from zoo.decode import GenerationConfig
from zoo.verbs import VerbOptions


@dataclass
class GenerationOptions(VerbOptions):
    """The shared options plus Hugging Face `generate`'s knobs, with its names and meanings. The
    defaults are HF's (zoo.decode.GenerationConfig's) but two: max_new_tokens 50, where HF stops
    at 20 tokens in all, prompt included; and top_k 0, so --do_sample draws from the whole
    distribution, where HF keeps its 50 most probable (--top_k=50 for HF's sampling)."""

    max_new_tokens: int = field(
        default=50, metadata={"help": "generate: tokens to add at most (HF: max_length 20, prompt included)"}
    )
    min_new_tokens: int = field(
        default=0, metadata={"help": "generate: end-of-text is forbidden before this many"}
    )
    do_sample: bool = field(
        default=False, metadata={"help": "generate: sample (false: greedy, or beam search)"}
    )
    temperature: float = field(default=1.0, metadata={"help": "generate: sampling temperature"})
    top_k: int = field(
        default=0,
        metadata={"help": "generate: sample among the k most probable (0 = all; HF's default is 50)"},
    )
    top_p: float = field(default=1.0, metadata={"help": "generate: nucleus sampling mass (1.0 = all)"})
    repetition_penalty: float = field(
        default=1.0, metadata={"help": "generate: CTRL's penalty on tokens already present (1.0 = none)"}
    )
    no_repeat_ngram_size: int = field(
        default=0, metadata={"help": "generate: never repeat an n-gram of this size (0 = off)"}
    )
    num_beams: int = field(default=1, metadata={"help": "generate: beam search width (1 = none)"})
    num_return_sequences: int = field(
        default=1,
        metadata={"help": "generate: continuations a prompt, one line each (samples, or beam search's best)"},
    )
    length_penalty: float = field(default=1.0, metadata={"help": "generate: beam scores / length ** this"})
    stop: list[str] = field(
        default_factory=list, metadata={"help": 'generate: stop strings, e.g. --stop=\'[".", "\\n"]\''}
    )
    seed: int = field(default=0, metadata={"help": "generate: the sampling seed"})
    cache_implementation: str = field(
        default="dynamic",
        metadata={"help": "generate: dynamic (growing KV cache) or static (fixed shapes, greedy/sampling)"},
    )
    compile: bool = field(
        default=False,
        metadata={
            "help": "generate: static cache's one-token step under torch.compile (CUDA graphs on CUDA; "
            "on the CPU the weights frozen into it)"
        },
    )
    steps_per_call: int = field(
        default=0,
        metadata={
            "help": "generate: static cache, greedy: one-token steps a call runs, choosing their ids "
            "inside it (0 = 4 where --compile on the CPU multiplies int8 weights only, else 1)"
        },
    )

    def check(self) -> None:
        """Refuses bad generation settings before a model is loaded or a prompt written."""
        super().check()
        self.generation_config(eot=None)

    def generation_config(self, eot: int | None) -> GenerationConfig:
        """zoo.decode's settings for these options, stopping at the end-of-text id `eot`."""
        config = GenerationConfig(
            max_new_tokens=self.max_new_tokens,
            min_new_tokens=self.min_new_tokens,
            do_sample=self.do_sample,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            repetition_penalty=self.repetition_penalty,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
            num_beams=self.num_beams,
            num_return_sequences=self.num_return_sequences,
            length_penalty=self.length_penalty,
            eos_id=eot,
            pad_id=eot,
            stop_strings=list(self.stop),
            seed=self.seed,
            cache_implementation=self.cache_implementation,
            compile=self.compile,
            steps_per_call=self.steps_per_call,
        )
        try:
            config.check()
        except Invalid as error:
            if error.key != "stop_strings":
                raise
            raise Invalid("stop", error.message) from None  # the command line's name for it
        return config


def prompts_of(loaded: Any, lines: list[str], options: GenerationOptions) -> list[list[int]]:
    """Each line's ids (an empty line: end-of-text alone, GPT-2's unconditional start). A prompt
    that leaves no room for max_new_tokens in the context keeps its last tokens, with a note."""
    context = loaded.config.max_len
    room = max(1, context - options.max_new_tokens)
    if options.max_new_tokens >= context:  # a row stops at the context's end, whatever was asked
        print(
            f"note: max_new_tokens {options.max_new_tokens} is more than the context of {context} "
            "holds: each prompt stops at the context's end",
            file=sys.stderr,
        )
    prompts = []
    for number, line in enumerate(lines, 1):
        ids = loaded.tokenizer.encode(line) or [loaded.tokenizer.eot_id]
        if len(ids) > room:
            print(
                f"note: prompt {number} has {len(ids)} tokens; kept its last {room} (context {context}, "
                f"max_new_tokens {options.max_new_tokens})",
                file=sys.stderr,
            )
            ids = ids[-room:]
        prompts.append(ids)
    return prompts


class TextStream:
    """on_token(id) for zoo.decode.generate that writes the text as it grows. A token may end
    inside a multi-byte character (byte-level BPE): text is written once it decodes whole. The
    end-of-text token that ends a row is not written."""

    def __init__(self, tokenizer: ByteBPETokenizer, write: Callable[[str], None]) -> None:
        self.tokenizer, self.write = tokenizer, write
        self.ids: list[int] = []
        self.written = 0

    def __call__(self, token: int) -> None:
        if token == self.tokenizer.eot_id:  # the end of the text, not part of it
            return
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids)
        if not text.endswith("\ufffd"):
            self._emit(text)

    def flush(self) -> None:
        self._emit(self.tokenizer.decode(self.ids))

    def _emit(self, text: str) -> None:
        if len(text) > self.written:
            self.write(text[self.written :])
            self.written = len(text)
