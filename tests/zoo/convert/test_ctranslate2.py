"""zoo.convert.ctranslate2: over the written directory, CTranslate2's token log-probabilities of a
given translation equal zoo's, and its greedy search zoo's, for the variants it maps (post- and
pre-norm, LayerNorm and RMSNorm, ReLU and GELU, sinusoidal (also scaled) and learned positions); the search
rules where the engine's defaults differ (EOS first, the length limit); restricted
self-attention is refused by name. (The trained-model check through the export verb is
tests/tasks/translation/test_export.py.)"""

from __future__ import annotations

import random

import pytest
import torch

from zoo.config import UserError
from zoo.convert.ctranslate2 import search_options, write_ctranslate2
from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.decode import beam_search, greedy_search
from zoo.models import ModelConfig, build_model

ctranslate2 = pytest.importorskip("ctranslate2", reason="needs ctranslate2 (pip install ctranslate2)")
WORDS = "a man in a blue shirt is standing on a ladder near the bushes while two dogs wait outside".split()
MAX_LEN = 12


@pytest.fixture(scope="module")
def tokenizer() -> SentencePieceTokenizer:
    rng = random.Random(0)
    corpus = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(500)]
    return SentencePieceTokenizer.train(corpus, vocab_size=60)


def tiny(vocab: int, **variant) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(encoder_layers=2, decoder_layers=2, dim=32, ffn_dim=64, num_heads=4, dropout=0.0)
    for key, value in variant.items():
        setattr(cfg, key, value)
    model = build_model(cfg, vocab, vocab, SPECIAL_IDS.pad)
    with torch.no_grad():  # noise on norms and biases too, so a misplaced one shows
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.05)
    return model.eval()


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"pre_norm": True, "norm": "rms", "activation": "gelu", "positions": "learned"},
        {"position_scale": 0.1},  # the table CTranslate2 reads is the scaled one
    ],
    ids=["post_norm", "pre_norm_rms_gelu_learned", "sinusoids_scaled"],
)
def test_scores_and_greedy_search_equal_zoo(tokenizer, tmp_path, variant):
    model = tiny(tokenizer.vocab_size, **variant)
    write_ctranslate2(model, tokenizer, tmp_path / "ct2")
    assert (tmp_path / "ct2" / "spm.model").read_bytes() == tokenizer.model
    engine = ctranslate2.Translator(str(tmp_path / "ct2"), intra_threads=1)
    for text in ["a man in a blue shirt", "two dogs wait outside near the ladder", "the bushes"]:
        ids = tokenizer.encode(text)
        src = torch.tensor([ids + [SPECIAL_IDS.eos]])  # zoo's sources end with EOS
        with torch.no_grad():
            ours = greedy_search(model, src, special=SPECIAL_IDS, max_len_a=0.0, max_len_b=MAX_LEN).best()[0]
        options = search_options(tokenizer, len(ids), max_len_a=0.0, max_len_b=MAX_LEN)
        result = engine.translate_batch([tokenizer.pieces(ids)], beam_size=1, **options)
        theirs = [tokenizer.pieces(range(tokenizer.vocab_size)).index(p) for p in result[0].hypotheses[0]]
        assert ours == theirs
    # a random model repeats one token; teacher-forced scores check every position's distribution
    src_ids, tgt_ids = tokenizer.encode("a man near the bushes"), tokenizer.encode("two dogs wait outside")
    src, tgt_in = torch.tensor([src_ids + [SPECIAL_IDS.eos]]), torch.tensor([[SPECIAL_IDS.bos] + tgt_ids])
    with torch.no_grad():
        logprobs = model(src, tgt_in).log_softmax(-1)[0]
    ours = logprobs.gather(1, torch.tensor([tgt_ids + [SPECIAL_IDS.eos]]).T)[:, 0]
    scored = engine.score_batch([tokenizer.pieces(src_ids)], [tokenizer.pieces(tgt_ids)])[0]
    torch.testing.assert_close(torch.tensor(scored.log_probs), ours, atol=1e-4, rtol=1e-4)


def zoo_search(model, ids: list[int], beam: int, **limit) -> list[int]:
    src = torch.tensor([ids + [SPECIAL_IDS.eos]])
    with torch.no_grad():
        if beam == 1:
            return greedy_search(model, src, special=SPECIAL_IDS, **limit).best()[0]
        return beam_search(model, src, special=SPECIAL_IDS, beam_size=beam, alpha=0.0, **limit).best()[0]


@pytest.mark.parametrize("beam", [1, 4])
def test_search_rules_where_the_engine_defaults_differ(tokenizer, tmp_path, beam):
    """EOS may come first in zoo (an empty translation); CTranslate2's default
    min_decoding_length=1 forbids it at step 0 and gives a sentence instead, so search_options
    sets 0. And the length limit: a |source with EOS| + b tokens before EOS in both."""
    model, ids = tiny(tokenizer.vocab_size), tokenizer.encode("a man in a blue shirt")
    limit = {"max_len_a": 1.0, "max_len_b": 3}
    with torch.no_grad():  # EOS's row (tied: input and output) made to outscore the first choice
        first = model(torch.tensor([ids + [SPECIAL_IDS.eos]]), torch.tensor([[SPECIAL_IDS.bos]]))[0, -1]
        model.output.weight[SPECIAL_IDS.eos] = 1.5 * model.output.weight[int(first.argmax())]
    vocabulary, source = tokenizer.pieces(range(tokenizer.vocab_size)), [tokenizer.pieces(ids)]

    def engine_search(name: str, **options) -> list[int]:
        """Export the model as it is now into tmp_path / name (once) and search there."""
        if not (tmp_path / name).exists():
            write_ctranslate2(model, tokenizer, tmp_path / name)
        engine = ctranslate2.Translator(str(tmp_path / name), intra_threads=1)
        result = engine.translate_batch(source, beam_size=beam, length_penalty=0.0, **options)
        return [vocabulary.index(piece) for piece in result[0].hypotheses[0]]

    options = search_options(tokenizer, len(ids), **limit)
    assert zoo_search(model, ids, beam, **limit) == [] == engine_search("eos_first", **options)
    del options["min_decoding_length"]  # the engine's default: 1
    assert engine_search("eos_first", **options) != []

    with torch.no_grad():  # EOS never chosen: both stop at the limit
        model.output.weight[SPECIAL_IDS.eos] = -1.5 * model.output.weight[int(first.argmax())]
    ours = zoo_search(model, ids, beam, **limit)
    assert len(ours) == len(ids) + 1 + 3
    assert engine_search("never_eos", **search_options(tokenizer, len(ids), **limit)) == ours


def test_restricted_self_attention_is_refused(tokenizer, tmp_path):
    with pytest.raises(UserError, match="model.window"):
        write_ctranslate2(tiny(tokenizer.vocab_size, window=2), tokenizer, tmp_path / "ct2")
