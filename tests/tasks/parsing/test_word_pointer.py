"""The seq2seq parser's word pointer: which word each decoder input reads, cached = uncached
decoding (greedy and beam), learning through the runner."""

from __future__ import annotations

import pytest
import torch

from tasks.parsing.data import Vocab
from tasks.parsing.linearize import allowed_next
from tasks.parsing.parsers import build_model
from tasks.parsing.seq2seq.model import PointerTransformer
from tasks.parsing.task import ParsingTask, score_trees
from tests.tasks.parsing.conftest import tiny_config
from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search, greedy_search
from zoo.decode.state import max_lengths
from zoo.train import evaluation, fit


def pointer_model(handful, tmp_path) -> tuple[PointerTransformer, Vocab]:
    cfg = tiny_config("seq2seq", str(tmp_path), 1)
    cfg.model.word_pointer = True
    vocab = Vocab.build(handful["train"])
    torch.manual_seed(0)
    return build_model(cfg, vocab).eval(), vocab


def test_each_decoder_input_reads_the_next_word_to_attach(handful, tmp_path) -> None:
    model, vocab = pointer_model(handful, tmp_path)
    src = torch.tensor([[5, 6, 7, SPECIAL_IDS.eos]])  # three words + EOS
    symbols = ["<s>", "(S", "XX", "(NP", "XX", "XX", ")NP", ")S", "XX"]  # the last one: a fourth word
    tgt_in = torch.tensor([[vocab.symbol_index[s] for s in symbols]])
    seen = []
    model.pointer.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    memory, mask = model.encode(src)
    model.decoder_states(tgt_in, memory, mask)
    expected = [0, 0, 1, 1, 2, 3, 3, 3, 3]  # never past EOS (position 3)
    torch.testing.assert_close(seen[0][0], memory[0, expected], rtol=0, atol=0)


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_cached_decoding_equals_uncached(handful, tmp_path, search) -> None:
    model, vocab = pointer_model(handful, tmp_path)
    src = torch.tensor(
        [[5, 9, 7, 11, SPECIAL_IDS.eos], [8, 6, SPECIAL_IDS.eos, 0, 0], [12, SPECIAL_IDS.eos, 0, 0, 0]]
    )
    words = (src != SPECIAL_IDS.pad).sum(dim=1) - 1
    limits = max_lengths(src, SPECIAL_IDS.pad, 1.0, 12, cap=model.max_len - 1)
    symbols = vocab.bracket_symbols()

    def trees_only(rows, prefixes):  # constrained as the parser decodes: every word gets its XX
        return allowed_next(prefixes, words[rows], limits[rows], symbols)

    options = dict(special=SPECIAL_IDS, max_len_a=1.0, max_len_b=12, allowed_tokens=trees_only)
    if search == "beam":
        run = lambda cache: beam_search(model, src, beam_size=3, alpha=0.3, use_cache=cache, **options)  # noqa: E731
    else:
        run = lambda cache: greedy_search(model, src, use_cache=cache, **options)  # noqa: E731
    with torch.no_grad():
        cached, uncached = run(True), run(False)
    assert torch.equal(cached.tokens, uncached.tokens)
    torch.testing.assert_close(cached.scores, uncached.scores, rtol=1e-4, atol=1e-4)
    xx = (cached.tokens == vocab.symbol_index["XX"]).sum(-1)
    assert torch.equal(xx[:, 0], words)  # the pointer moved over every word


def test_a_tiny_parser_with_a_word_pointer_learns_a_handful_of_trees(handful, tmp_path) -> None:
    cfg = tiny_config("seq2seq", str(tmp_path), 150)
    cfg.model.word_pointer = True
    task = ParsingTask(cfg, handful)
    result = fit(cfg, task)
    assert result.metrics["f1"] == 100.0
    with evaluation(result.model) as model:
        scored, _ = score_trees(model, task.vocab, handful["test"], cfg)
    assert scored.all.f1 == 100.0
