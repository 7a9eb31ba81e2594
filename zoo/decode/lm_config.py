"""The settings of decoder-only generation (zoo.decode.lm_generate): Hugging Face's
`GenerationConfig` names and defaults, so that a user of `model.generate(...)` finds the same
knobs, with the same meaning, here."""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid


@dataclass
class GenerationConfig:
    max_new_tokens: int = field(
        default=20,
        metadata={
            "help": "tokens to add at most (HF's default is max_length 20, which counts the prompt too)"
        },
    )
    min_new_tokens: int = field(default=0, metadata={"help": "EOS is forbidden before this many new tokens"})
    do_sample: bool = field(default=False, metadata={"help": "sample (false: greedy, or beam search)"})
    temperature: float = field(default=1.0, metadata={"help": "sampling: divides the logits"})
    top_k: int = field(default=50, metadata={"help": "sampling: only the k most probable ids (0 = all)"})
    top_p: float = field(
        default=1.0, metadata={"help": "sampling: the most probable ids holding this mass (1.0 = all)"}
    )
    repetition_penalty: float = field(
        default=1.0,
        metadata={"help": "CTRL's penalty on ids already in the sequence, prompt included (1.0 = none)"},
    )
    no_repeat_ngram_size: int = field(
        default=0, metadata={"help": "no n-gram of this size occurs twice, prompt included (0 = off)"}
    )
    num_beams: int = field(default=1, metadata={"help": "beam search width (1 = none)"})
    num_return_sequences: int = field(
        default=1,
        metadata={"help": "sequences per prompt: independent samples, or beam search's best (<= num_beams)"},
    )
    length_penalty: float = field(
        default=1.0, metadata={"help": "beam search: a finished beam scores log p / length ** this"}
    )
    early_stopping: bool | str = field(
        default=False,
        metadata={
            "help": "beam search: True = stop at num_beams finished; False = when a heuristic says no "
            "live beam can win; 'never' = only when none can (HF's three rules)"
        },
    )
    eos_id: int | None = field(default=None, metadata={"help": "the end-of-sequence id (None = none)"})
    pad_id: int | None = field(
        default=None, metadata={"help": "the id in the left padding of batched prompts (None = eos_id or 0)"}
    )
    stop_strings: list[str] = field(
        default_factory=list, metadata={"help": "a row stops once its new text contains one of these"}
    )
    seed: int = field(default=0, metadata={"help": "sampling: the seed of the random stream"})
    cache_implementation: str = field(
        default="dynamic",
        metadata={
            "help": "dynamic: the KV cache grows and ended rows leave the batch; static: fixed buffers, "
            "every step the same shapes (greedy and sampling; zoo.decode.lm_static)"
        },
    )
    compile: bool = field(
        default=False,
        metadata={
            "help": "static cache: run the one-token step under torch.compile (CUDA graphs on CUDA; "
            "on the CPU the weights frozen into it, recompiled when they change)"
        },
    )
    max_cache_len: int = field(
        default=0,
        metadata={
            "help": "static cache: its positions, at least the prompts' width plus max_new_tokens (0 = "
            "that, rounded up to a power of two: each step attends over all of them, and each length "
            "is a graph of its own under compile)"
        },
    )
    steps_per_call: int = field(
        default=0,
        metadata={
            "help": "static cache, greedy: one-token steps run per call, their ids chosen inside it "
            "(0 = 4 where the compiled CPU step's products are all int8, else 1; zoo.decode.lm_static)"
        },
    )

    def check(self) -> None:
        positive = {"max_new_tokens": 1, "num_beams": 1, "num_return_sequences": 1}
        non_negative = ("min_new_tokens", "top_k", "no_repeat_ngram_size", "steps_per_call")
        for key, low in [*positive.items(), *((key, 0) for key in non_negative)]:
            if getattr(self, key) < low:
                raise Invalid(key, f"must be at least {low}, not {getattr(self, key)}")
        if self.min_new_tokens > self.max_new_tokens:
            raise Invalid(
                "min_new_tokens", f"{self.min_new_tokens} is more than max_new_tokens ({self.max_new_tokens})"
            )
        for key in ("temperature", "repetition_penalty"):
            if not getattr(self, key) > 0:
                raise Invalid(key, f"must be positive, not {getattr(self, key)}")
        if not 0.0 <= self.top_p <= 1.0:
            raise Invalid("top_p", f"must be in [0, 1], not {self.top_p}")
        if not isinstance(self.early_stopping, bool) and self.early_stopping != "never":
            raise Invalid("early_stopping", f"must be False, True or 'never', not {self.early_stopping!r}")
        if self.num_return_sequences > 1 and not self.do_sample and self.num_beams == 1:
            raise Invalid(
                "num_return_sequences", "greedy search gives one: sample (do_sample) or set num_beams"
            )
        if self.num_beams > 1 and self.num_return_sequences > self.num_beams:
            raise Invalid(
                "num_return_sequences",
                f"beam search keeps {self.num_beams} (num_beams), not {self.num_return_sequences}",
            )
        if self.do_sample and self.num_beams > 1:
            raise Invalid("num_beams", "beam search does not sample here: set do_sample false or num_beams 1")
        for key in ("eos_id", "pad_id"):
            if getattr(self, key) is not None and getattr(self, key) < 0:
                raise Invalid(key, f"must be an id (at least 0) or None, not {getattr(self, key)}")
        if self.cache_implementation not in ("dynamic", "static"):
            raise Invalid(
                "cache_implementation", f"must be dynamic or static, not {self.cache_implementation!r}"
            )
        if self.cache_implementation == "static" and self.num_beams > 1:
            raise Invalid("cache_implementation", "static serves greedy search and sampling: set num_beams 1")
        if self.max_cache_len < 0:
            raise Invalid("max_cache_len", f"must be at least 0, not {self.max_cache_len}")
        if self.max_cache_len and self.cache_implementation != "static":
            raise Invalid("max_cache_len", "sizes the static cache: set cache_implementation static")
        if self.compile and self.cache_implementation != "static":
            raise Invalid("compile", "compiles the static cache's step: set cache_implementation static")
        if self.steps_per_call > 1:
            self.check_steps_per_call()
        if any(not isinstance(s, str) or not s for s in self.stop_strings):
            raise Invalid("stop_strings", f"must be non-empty strings, not {self.stop_strings!r}")

    def check_steps_per_call(self) -> None:
        if self.cache_implementation != "static":
            raise Invalid("steps_per_call", "runs steps on the static cache: set cache_implementation static")
        if not self.greedy_biases_only():
            raise Invalid(
                "steps_per_call",
                "chooses ids greedily inside the call, where only min_new_tokens applies: set do_sample "
                "false, repetition_penalty 1 and no_repeat_ngram_size 0",
            )

    def greedy_biases_only(self) -> bool:
        """Whether this is greedy search whose only logits processor is min_new_tokens' ban on EOS,
        which several steps a call apply as a bias (zoo.decode.lm_static.greedy_steps); the other
        processors read the growing sequences."""
        return not self.do_sample and self.repetition_penalty == 1.0 and not self.no_repeat_ngram_size
