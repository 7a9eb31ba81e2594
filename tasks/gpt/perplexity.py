"""Language-model evaluation as the papers report it: sliding-window perplexity per token, per
word (WikiText's convention) and bits per byte, and WikiText's detokenizer.

Scoring a text: its ids follow an end-of-text token (GPT-2's and lm-evaluation-harness's
convention), so every token of the text is scored, its first predicted from the document boundary
alone, as training saw document starts; the bytes and words are then those of the whole text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.config import UserError
from zoo.data.bpe import ByteBPETokenizer
from zoo.data.paths import require
from zoo.data.text import read_lines

IGNORE_INDEX = -100  # targets the model leaves out of its sums

# WikiText's tokenization undone, rule by rule in the order of the detokenizer Megatron-LM and
# lm-evaluation-harness use for GPT-2-style zero-shot scores, so the scored text is theirs.
_DETOKENIZE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(re.escape("s '")), "s'"),  # plural possessive: "players ' union" -> "players' union"
    # (the reference's "' [0-9]" rule is written with literal slashes and never fires: left out)
    (re.compile(re.escape(" @-@ ")), "-"),  # intra-word hyphen: "long @-@ term" -> "long-term"
    (re.compile(re.escape(" @,@ ")), ","),  # digit-group comma: "1 @,@ 000" -> "1,000"
    (re.compile(re.escape(" @.@ ")), "."),  # decimal point: "3 @.@ 5" -> "3.5"
    (re.compile(re.escape(" : ")), ": "),  # no space before a colon
    (re.compile(re.escape(" ; ")), "; "),  # ... a semicolon
    (re.compile(re.escape(" . ")), ". "),  # ... a full stop inside a line
    (re.compile(re.escape(" ! ")), "! "),  # ... an exclamation mark
    (re.compile(re.escape(" ? ")), "? "),  # ... a question mark
    (re.compile(re.escape(" , ")), ", "),  # ... a comma
    (re.compile(r"\(\s*([^\)]*?)\s*\)"), r"(\1)"),  # no spaces inside parentheses
    (re.compile(r"\[\s*([^\]]*?)\s*\]"), r"[\1]"),  # ... square brackets
    (re.compile(r"{\s*([^}]*?)\s*}"), r"{\1}"),  # ... braces
    (re.compile(r"\"\s*([^\"]*?)\s*\""), r'"\1"'),  # ... double quotes, paired left to right
    (re.compile(r"'\s*([^']*?)\s*'"), r"'\1'"),  # ... single quotes, paired left to right
    (re.compile(re.escape("= = = =")), "===="),  # sub-sub-heading marks: "= = = = H" -> "==== H"
    (re.compile(re.escape("= = =")), "==="),  # sub-heading marks
    (re.compile(re.escape("= =")), "=="),  # heading marks
    (re.compile(re.escape(" \N{DEGREE SIGN} ")), "\N{DEGREE SIGN}"),  # "20 ° C" -> "20°C"
    (re.compile(re.escape(" \n")), "\n"),  # no space at the end of a line
    (re.compile(re.escape("\n ")), "\n"),  # ... or at the start of one
    (re.compile(re.escape(" N ")), " 1 "),  # Penn Treebank's number placeholder (kept: theirs)
    (re.compile(re.escape(" 's")), "'s"),  # possessive and "is" clitic: "John 's" -> "John's"
]
# WikiText article titles are " = Title = " lines; headings have two or more "=" a side.
_WIKITEXT_TITLE = re.compile(r"^= [^=].* =$")


def wikitext_detokenize(text: str) -> str:
    """WikiText's tokenized text as running text (see the rules above). `<unk>` (WikiText v1's
    rare words) stays the literal text "<unk>", as GPT-2's paper scored the v1 files (it notes
    the string is rare in its training text): the text scored is the file's, nothing guessed."""
    for pattern, replacement in _DETOKENIZE:
        text = pattern.sub(replacement, text)
    return text


def wikitext_words(path: Path) -> int:
    """The word count that per-word perplexity divides by, as the WikiText papers count it over
    the tokenized file: every whitespace token plus one end-of-line per line (blank lines too).
    WikiText-2's test split: 245,569."""
    return sum(len(line.split()) + 1 for line in read_lines(Path(path)))


def _read_utf8(path: Path) -> str:
    """The text of a UTF-8 file, as it is (lines not stripped: the rules above see their spaces).

    Raises:
        UserError: the file is missing or not UTF-8 (the message names it and the line).
    """
    data = require(Path(path), "WikiText file").read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(f"{path}:{line}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def wikitext_text(path: Path) -> str:
    """A WikiText file's text, detokenized whole (Megatron-LM's way; a quote left unpaired in one
    article then pairs with the next quote, across lines: once in WikiText-2's test split)."""
    return wikitext_detokenize(_read_utf8(path))


def wikitext_articles(path: Path) -> list[str]:
    """The articles of a WikiText file, each from its title line (` = Title = `) to the next,
    detokenized one by one (lm-evaluation-harness's way: a stray quote pairs with one in its own
    article at most), paragraphs apart by a blank line as in the file."""
    articles: list[list[str]] = []
    for line in _read_utf8(path).split("\n"):
        if _WIKITEXT_TITLE.match(line.strip()) or not articles:
            articles.append([])
        articles[-1].append(line)
    texts = (wikitext_detokenize("\n".join(lines)).strip() for lines in articles)
    return [text for text in texts if text]


class _Window(NamedTuple):
    """Inputs ids[begin:end] and targets ids[begin + 1:end + 1], of which the last `new` count."""

    begin: int
    end: int
    new: int


def _windows(count: int, context: int, stride: int) -> list[_Window]:
    windows, scored_to, begin = [], 0, 0  # scored_to: the last scored position (0 never is)
    while scored_to < count - 1:
        end = min(begin + context, count - 1)
        windows.append(_Window(begin, end, end - scored_to))
        scored_to, begin = end, begin + stride
    return windows


def _batches(windows: list[_Window], batch_size: int) -> list[list[_Window]]:
    """Windows of equal length in groups of at most `batch_size` (only the last window can be
    shorter than the context: it runs alone)."""
    groups: list[list[_Window]] = []
    for window in windows:
        same = groups and groups[-1][0].end - groups[-1][0].begin == window.end - window.begin
        if same and len(groups[-1]) < batch_size:
            groups[-1].append(window)
        else:
            groups.append([window])
    return groups


def _checked(ids: Tensor, context: int, stride: int, batch_size: int) -> Tensor:
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D (N,), not {tuple(ids.shape)}")
    if not 1 <= stride <= context or batch_size < 1:
        raise ValueError(
            f"need 1 <= stride <= context and batch_size >= 1: {stride=}, {context=}, {batch_size=}"
        )
    return ids.long().cpu()


def _scored_batches(
    ids: Tensor, context: int, stride: int, batch_size: int
) -> Iterator[tuple[Tensor, Tensor, list[_Window]]]:
    """(inputs, targets, windows) per batch of windows; targets an earlier window scored are
    IGNORE_INDEX."""
    for group in _batches(_windows(len(ids), context, stride), batch_size):
        inputs = torch.stack([ids[w.begin : w.end] for w in group])
        targets = torch.stack([ids[w.begin + 1 : w.end + 1] for w in group])
        for row, window in enumerate(group):
            targets[row, : window.end - window.begin - window.new] = IGNORE_INDEX
        yield inputs, targets, group


@torch.inference_mode()
def sliding_window_nll(
    model: nn.Module, ids: Tensor, *, context: int, stride: int, batch_size: int
) -> tuple[float, int]:
    """Total NLL (nats, summed in float64) of `ids` and the number of tokens scored, by Hugging
    Face's "perplexity of fixed-length models": windows advance by `stride`; the first scores
    every target it has, each later one only its last `stride` (new) targets, after at least
    `context - stride` tokens of context. Every token but the first is scored exactly once.

    A window here is `context` input tokens (the model's whole context) and their next tokens,
    one more than the guide's windows of `context` tokens in all: with stride == context, the
    guide's windows leave each window's first token unscored; these score it.

    Args:
        model: called as `model(ids, targets, ignore_index=-100)`, returning summed `.nll` and
            `.units` (zoo.models.gpt.GPT); put in eval mode by the caller.
        ids: (N,) token ids.
        context: input tokens per window, at most the model's positions.
        stride: tokens a window advances, 1..context.
        batch_size: windows per forward pass.
    """
    ids = _checked(ids, context, stride, batch_size)
    device = next(model.parameters()).device
    nll, tokens = 0.0, 0
    for inputs, targets, _ in _scored_batches(ids, context, stride, batch_size):
        sums = model(inputs.to(device), targets.to(device), ignore_index=IGNORE_INDEX)
        nll += float(sums.nll)
        tokens += int(sums.units)
    return nll, tokens


@torch.inference_mode()
def token_nll(model: nn.Module, ids: Tensor, *, context: int, stride: int, batch_size: int) -> Tensor:
    """(N,) float64: the NLL (nats) of each token of `ids` as sliding_window_nll scores it, 0 for
    the first (never scored); their sum is sliding_window_nll's. For analyses of where the loss
    goes; `model(ids)` must return logits (B, T, V), made whole per batch.

    Args: as for sliding_window_nll.
    """
    ids = _checked(ids, context, stride, batch_size)
    device = next(model.parameters()).device
    out = torch.zeros(len(ids), dtype=torch.float64)
    for inputs, targets, group in _scored_batches(ids, context, stride, batch_size):
        logits = model(inputs.to(device)).float()
        losses = F.cross_entropy(
            logits.flatten(0, 1), targets.to(device).flatten(), ignore_index=IGNORE_INDEX, reduction="none"
        ).view_as(targets)
        for row, window in enumerate(group):
            out[window.end - window.new + 1 : window.end + 1] = losses[row, -window.new :].double().cpu()
    return out


def _exp(x: float) -> float:
    return math.exp(x) if x < 700 else math.inf


def lm_metrics(
    nll: float, tokens: int, *, words: int | None = None, bytes_: int | None = None
) -> dict[str, float]:
    """Loss (nats per token) and perplexity per token; per word (WikiText's convention: words
    as wikitext_words counts them) when `words` is given; bits per UTF-8 byte of the scored text
    when `bytes_` is given. Per-word and per-byte figures compare across tokenizers."""
    if tokens < 1:
        raise UserError("nothing to score: the text has no token after the first")
    metrics = {"loss": nll / tokens, "ppl": _exp(nll / tokens)}
    if words:
        metrics["word_ppl"] = _exp(nll / words)
    if bytes_:
        metrics["bpb"] = nll / math.log(2) / bytes_
    return metrics


def score_ids(
    model: nn.Module,
    ids: Tensor,
    *,
    text: str | None = None,
    words: int | None = None,
    context: int,
    stride: int,
    batch_size: int,
) -> dict[str, float]:
    """lm_metrics of `ids` (the first is never scored: give the text's ids after EOT) with the
    counts: tokens scored, and `words` and the UTF-8 bytes of `text` where given.

    Args:
        text: the text the scored ids encode (for bits per byte).
        words: its word count (for perplexity per word).
        context, stride, batch_size: as for sliding_window_nll.
    """
    nll, tokens = sliding_window_nll(model, ids, context=context, stride=stride, batch_size=batch_size)
    bytes_ = len(text.encode("utf-8")) if text is not None else None
    counts = {"tokens": tokens, "words": words, "bytes": bytes_}
    metrics = lm_metrics(nll, tokens, words=words, bytes_=bytes_)
    return {**metrics, **{key: value for key, value in counts.items() if value is not None}}


def score_text(
    model: nn.Module,
    tokenizer: ByteBPETokenizer,
    text: str,
    *,
    context: int,
    stride: int,
    batch_size: int,
    words: int | None = None,
) -> dict[str, float]:
    """score_ids of `text` encoded after an EOT, so every token of it is scored and the bytes
    (and `words`, when given) are the whole text's."""
    ids = torch.tensor([tokenizer.eot_id, *tokenizer.encode(text)])
    return score_ids(
        model, ids, text=text, words=words, context=context, stride=stride, batch_size=batch_size
    )
