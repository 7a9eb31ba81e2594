"""Sliding-window perplexity equals brute-force scoring, scores every token once whatever the
batching, and the metrics and WikiText's detokenizer and word count follow their definitions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.gpt.perplexity import (
    lm_metrics,
    score_ids,
    score_text,
    sliding_window_nll,
    token_nll,
    wikitext_articles,
    wikitext_detokenize,
    wikitext_words,
)
from zoo.blocks.output_loss import LossSums
from zoo.data.bpe import ByteBPETokenizer
from zoo.models.gpt import GPTModelConfig, build_gpt

VOCAB = 50


@pytest.fixture(scope="module")
def model() -> nn.Module:
    torch.manual_seed(0)
    return build_gpt(GPTModelConfig(preset="nano", dropout=0, attn_dropout=0), VOCAB).eval()


def random_ids(count: int, seed: int = 1) -> Tensor:
    return torch.randint(0, VOCAB, (count,), generator=torch.Generator().manual_seed(seed))


def next_token_nll(model: nn.Module, inputs: Tensor, target: int) -> float:
    """-log p(target | inputs) from the logits path (no fused loss)."""
    with torch.no_grad():
        logits = model(inputs[None])[0, -1].double()
    return float(-F.log_softmax(logits, -1)[target])


def test_stride_equal_to_context_is_disjoint_chunks(model: nn.Module):
    ids, context = random_ids(45), 8
    expected = 0.0
    for start in range(1, len(ids), context):  # chunk of targets start..start+context-1
        end = min(start + context, len(ids))
        inputs, targets = ids[start - 1 : end - 1], ids[start:end]
        with torch.no_grad():
            logits = model(inputs[None])[0].double()
        expected += float(F.cross_entropy(logits, targets, reduction="sum"))
    nll, tokens = sliding_window_nll(model, ids, context=context, stride=context, batch_size=2)
    assert tokens == len(ids) - 1
    assert nll == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("count", [20, 40])  # within the context (full prefix), and beyond it
def test_stride_one_is_per_token_scoring_on_the_prefix(model: nn.Module, count: int):
    ids, context = random_ids(count), 24
    expected = sum(next_token_nll(model, ids[max(0, t - context) : t], int(ids[t])) for t in range(1, count))
    nll, tokens = sliding_window_nll(model, ids, context=context, stride=1, batch_size=5)
    assert tokens == count - 1
    assert nll == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("stride", [1, 5, 24])
def test_token_nll_gives_each_tokens_loss_summing_to_the_total(model: nn.Module, stride: int):
    ids, context = random_ids(40), 24
    per_token = token_nll(model, ids, context=context, stride=stride, batch_size=3)
    nll, _ = sliding_window_nll(model, ids, context=context, stride=stride, batch_size=3)
    assert per_token.shape == (40,) and per_token[0] == 0
    assert float(per_token.sum()) == pytest.approx(nll, rel=1e-5)
    if stride == 1:  # each token scored after its whole context
        expected = [next_token_nll(model, ids[max(0, t - context) : t], int(ids[t])) for t in range(1, 40)]
        assert per_token[1:].tolist() == pytest.approx(expected, rel=1e-5)


class Recorder(nn.Module):
    """Stands in for a model: records the targets it is asked to score (here: positions)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.scored: list[int] = []
        self.batch_sizes: list[int] = []

    def forward(self, ids: Tensor, targets: Tensor, *, ignore_index: int) -> LossSums:
        self.batch_sizes.append(len(ids))
        kept = targets[targets != ignore_index]
        self.scored += kept.tolist()
        nll = kept.double().sum()
        return LossSums(nll, nll, torch.tensor(kept.numel()))


@pytest.mark.parametrize(
    "count, context, stride, batch_size",
    [(2, 4, 4, 1), (5, 8, 3, 2), (17, 4, 4, 3), (17, 4, 3, 2), (30, 7, 2, 4), (64, 16, 5, 1), (9, 9, 9, 8)],
)
def test_every_token_but_the_first_is_scored_once(count: int, context: int, stride: int, batch_size: int):
    recorder = Recorder()
    positions = torch.arange(count)
    nll, tokens = sliding_window_nll(
        recorder, positions, context=context, stride=stride, batch_size=batch_size
    )
    assert sorted(recorder.scored) == list(range(1, count))
    assert tokens == count - 1 and nll == sum(range(1, count))
    assert max(recorder.batch_sizes) <= batch_size


def test_each_scored_token_has_at_least_context_minus_stride_tokens_before_it():
    class Context(Recorder):
        def forward(self, ids: Tensor, targets: Tensor, *, ignore_index: int) -> LossSums:
            for row_ids, row_targets in zip(ids, targets):
                for j in (row_targets != ignore_index).nonzero().flatten().tolist():
                    self.scored.append(j + 1)  # inputs before target j: row_ids[: j + 1]
                    assert int(row_ids[j]) + 1 == int(row_targets[j])
            zero = torch.zeros((), dtype=torch.float64)
            return LossSums(zero, zero, (targets != ignore_index).sum())

    recorder = Context()
    sliding_window_nll(recorder, torch.arange(100), context=16, stride=6, batch_size=3)
    assert min(recorder.scored[15:]) >= 16 - 6  # after the first window's own tokens


def test_batching_does_not_change_the_result(model: nn.Module):
    ids = random_ids(70)
    results = [sliding_window_nll(model, ids, context=16, stride=6, batch_size=b) for b in (1, 3, 100)]
    assert {tokens for _, tokens in results} == {69}
    for nll, _ in results[1:]:
        assert nll == pytest.approx(results[0][0], rel=1e-6)


def test_bad_arguments_are_refused(model: nn.Module):
    with pytest.raises(ValueError, match="stride"):
        sliding_window_nll(model, random_ids(10), context=4, stride=5, batch_size=1)
    with pytest.raises(ValueError, match="1-D"):
        sliding_window_nll(model, random_ids(10)[None], context=4, stride=2, batch_size=1)


def test_metrics_follow_their_definitions():
    m = lm_metrics(120.0, 60, words=40, bytes_=200)
    assert m["loss"] == 2.0 and m["ppl"] == pytest.approx(math.exp(2.0))
    assert m["word_ppl"] == pytest.approx(math.exp(3.0))
    assert m["bpb"] == pytest.approx(120.0 / math.log(2) / 200)
    assert set(lm_metrics(1.0, 1)) == {"loss", "ppl"}
    assert lm_metrics(1e6, 1)["ppl"] == math.inf


def test_score_text_scores_every_token_after_eot():
    tokenizer = ByteBPETokenizer.train(["a small text, a small model."] * 20, 300)
    model = build_gpt(GPTModelConfig(preset="nano", dropout=0, attn_dropout=0), tokenizer.vocab_size).eval()
    text = "a small text, naïve 😀"
    m = score_text(model, tokenizer, text, context=8, stride=4, batch_size=2, words=5)
    ids = torch.tensor([tokenizer.eot_id, *tokenizer.encode(text)])
    assert m["tokens"] == len(ids) - 1 and m["bytes"] == len(text.encode()) and m["words"] == 5
    same = score_ids(model, ids, text=text, words=5, context=8, stride=4, batch_size=2)
    assert same == m
    nll, _ = sliding_window_nll(model, ids, context=8, stride=4, batch_size=2)
    assert m["word_ppl"] == pytest.approx(math.exp(nll / 5))
    assert m["bpb"] == pytest.approx(nll / math.log(2) / len(text.encode()))


def test_detokenizer_undoes_wikitext_tokenization():
    cases = {
        " = Robert Boulter = \n": " = Robert Boulter =\n",
        " = = Career = = \n": " == Career ==\n",
        " = = = 2000 – 2005 = = = \n": " === 2000 – 2005 ===\n",
        "the long @-@ term plan cost 1 @,@ 000 or 3 @.@ 5 %": "the long-term plan cost 1,000 or 3.5 %",
        ' He said , " it is ( not ) over " ; then : stop . Go ! \n': (
            ' He said, "it is (not) over"; then: stop. Go!\n'
        ),
        "John 's book and the players ' union": "John's book and the players' union",
        "a [ note ] and { x } at 20 ° C": "a [note] and {x} at 20°C",
        "an <unk> word": "an <unk> word",
        "line one . \n second line": "line one.\nsecond line",
    }
    for tokenized, expected in cases.items():
        assert wikitext_detokenize(tokenized) == expected, tokenized


WIKITEXT = (
    " \n = Alpha = \n \n Alpha is a ( small ) test @-@ case . \n \n = = History = = \n \n It 's old . \n"
    " \n = Beta = \n \n Beta <unk> . \n"
)


def test_wikitext_words_and_articles(tmp_path: Path):
    path = tmp_path / "test.txt"
    path.write_text(WIKITEXT, encoding="utf-8")
    lines = WIKITEXT.split("\n")[:-1]
    assert wikitext_words(path) == sum(len(line.split()) for line in lines) + len(lines)
    assert wikitext_articles(path) == [
        "= Alpha =\n\nAlpha is a (small) test-case.\n\n== History ==\n\nIt's old.",
        "= Beta =\n\nBeta <unk>.",
    ]


@pytest.mark.data
def test_wikitext2_test_has_the_papers_word_count(data_dir: Path):
    path = data_dir / "wikitext-2" / "test.txt"
    if not path.is_file():
        pytest.skip(f"no WikiText-2 test split at {path}")
    assert wikitext_words(path) == 245_569
