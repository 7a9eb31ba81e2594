"""GPT-2's byte-level BPE with Hugging Face `tokenizers`.

Text is cut by GPT-2's pre-tokenizer (its regex, no prefix space), each piece's UTF-8 bytes are
mapped to 256 printable characters, and BPE merges them; every string has an encoding, so there
is no unknown token. `<|endoftext|>` is the one special token, last in the vocabulary as in
GPT-2's (id 50,256 of 50,257); like GPT-2's tokenizers in Hugging Face, the literal text
`<|endoftext|>` encodes to it.

Three ways in: train on the training text (`ByteBPETokenizer.train`), GPT-2's own `vocab.json`
and `merges.txt` (`from_gpt2_files`, unchanged), or a `tokenizer.json` (`from_bytes`, which
also travels inside every checkpoint of a run). Trained and loaded tokenizers are built by one
function from a vocabulary and merges, so both are the pipeline `transformers.GPT2TokenizerFast`
builds, and `save_hf_files` writes what it reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, trainers
from tokenizers.models import BPE

from zoo.config import UserError
from zoo.data.hf_tokenizer import HFTokenizer
from zoo.data.paths import write_atomic

EOT = "<|endoftext|>"
TOKENIZER_JSON = "tokenizer.json"
VOCAB_JSON, MERGES_TXT = "vocab.json", "merges.txt"
MERGES_HEADER = "#version: 0.2"  # the first line of GPT-2's merges.txt


def _pipeline(vocab: dict[str, int], merges: list[tuple[str, str]]) -> Tokenizer:
    """GPT-2's pipeline (as transformers' GPT2Tokenizer builds it) over `vocab` and `merges`,
    with EOT a special token: its id in `vocab` when there (GPT-2's files), else the next one."""
    tokenizer = Tokenizer(
        BPE(vocab, merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(EOT, special=True)])
    return tokenizer


def _merge_pairs(model: dict) -> list[tuple[str, str]]:
    """The merges of a BPE model's JSON: pairs (tokenizers >= 0.20) or "a b" strings (before)."""
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]


class ByteBPETokenizer(HFTokenizer):
    """Text <-> byte-level BPE ids.

    Args:
        tokenizer: a `tokenizers.Tokenizer` with a BPE model, the ByteLevel pre-tokenizer and EOT.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        if not isinstance(tokenizer.model, BPE) or not isinstance(
            tokenizer.pre_tokenizer, pre_tokenizers.ByteLevel
        ):
            raise UserError(
                "not a byte-level BPE tokenizer (GPT-2's kind): a BPE model with a ByteLevel pre-tokenizer"
            )
        eot_id = tokenizer.token_to_id(EOT)
        if eot_id is None:
            raise UserError(f"byte-level BPE vocabulary lacks the end-of-text token {EOT}")
        super().__init__(tokenizer)
        self.eot_id = eot_id

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, *, min_frequency: int = 2) -> ByteBPETokenizer:
        """A vocabulary of at most `vocab_size` tokens learnt from `texts` (streamed), laid out as
        GPT-2's: the 256 bytes (ids 0-255, in GPT-2's order), the merges in the order learnt, EOT
        last. A text too small for that many merges gives a smaller vocabulary.

        Args:
            min_frequency: pairs seen fewer times are not merged.
        """
        if vocab_size < 257:
            raise UserError(
                f"a byte-level BPE needs at least 257 tokens (256 bytes and {EOT}), not {vocab_size}"
            )
        learner = Tokenizer(BPE())
        # EOT written in the text (files of documents joined by it) teaches no merges.
        learner.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(EOT, "removed"), pre_tokenizers.ByteLevel(add_prefix_space=False)]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size - 1,  # EOT is added after the merges, to end up last
            min_frequency=min_frequency,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=[],
            show_progress=False,
        )
        learner.train_from_iterator(texts, trainer)
        model = json.loads(learner.to_str())["model"]
        vocab = {**model["vocab"], EOT: len(model["vocab"])}
        return cls(_pipeline(vocab, _merge_pairs(model)))

    @classmethod
    def from_gpt2_files(cls, vocab_json: Path, merges_txt: Path) -> ByteBPETokenizer:
        """GPT-2's own `vocab.json` (token -> id) and `merges.txt` (one "a b" merge a line, after a
        `#version` line), read unchanged; the ids are GPT-2's."""
        for path in (vocab_json, merges_txt):
            if not Path(path).is_file():
                raise UserError(f"GPT-2 tokenizer file not found: {path}")
        try:
            vocab, merges = BPE.read_file(str(vocab_json), str(merges_txt))
        except Exception as error:  # tokenizers raises its own exception types on bad files
            raise UserError(f"{vocab_json}, {merges_txt}: not GPT-2 vocab/merges files ({error})") from None
        return cls(_pipeline(vocab, merges))

    @classmethod
    def from_path(cls, path: str | Path) -> ByteBPETokenizer:
        """A `tokenizer.json`, or a folder holding one (a zoo run, a Hugging Face directory) or
        GPT-2's `vocab.json` and `merges.txt`."""
        path = Path(path).expanduser()
        if path.is_dir():
            if (path / TOKENIZER_JSON).is_file():
                path = path / TOKENIZER_JSON
            elif (path / VOCAB_JSON).is_file() and (path / MERGES_TXT).is_file():
                return cls.from_gpt2_files(path / VOCAB_JSON, path / MERGES_TXT)
            else:
                raise UserError(f"{path}: holds neither {TOKENIZER_JSON} nor {VOCAB_JSON} with {MERGES_TXT}")
        return cls.from_json_file(path)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, EOT included as its text, so that decode(encode(x)) == x. Ids that end
        inside a character's UTF-8 bytes decode to U+FFFD there."""
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def merges(self) -> list[tuple[str, str]]:
        """The merges, in order of priority."""
        return _merge_pairs(json.loads(self.tokenizer.to_str())["model"])

    def save_hf_files(self, directory: Path, *, max_len: int) -> None:
        """The tokenizer files of a Hugging Face GPT-2 directory: `vocab.json` and `merges.txt`
        (GPT-2's formats, EOT in the vocabulary), `tokenizer.json`, `tokenizer_config.json` and
        `special_tokens_map.json`; `GPT2TokenizerFast` and `AutoTokenizer` read them to these ids.

        Args:
            max_len: the model's context (`model_max_length`).
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        vocab = dict(
            sorted(self.tokenizer.get_vocab(with_added_tokens=True).items(), key=lambda item: item[1])
        )
        merges = "".join(f"{a} {b}\n" for a, b in self.merges())
        special = {"bos_token": EOT, "eos_token": EOT, "unk_token": EOT}
        config = {
            "tokenizer_class": "GPT2Tokenizer",
            "model_max_length": max_len,
            "add_prefix_space": False,
            "add_bos_token": False,
            "errors": "replace",
            # GPT-2's decode is exact; transformers' clean-up would join " ," and " 's".
            "clean_up_tokenization_spaces": False,
            **special,
        }
        files = {
            VOCAB_JSON: json.dumps(vocab, ensure_ascii=False),
            MERGES_TXT: f"{MERGES_HEADER}\n{merges}",
            TOKENIZER_JSON: self.tokenizer.to_str(),
            "tokenizer_config.json": json.dumps(config, indent=2),
            "special_tokens_map.json": json.dumps(special, indent=2),
        }
        for name, text in files.items():
            write_atomic(directory / name, text.encode("utf-8"))
