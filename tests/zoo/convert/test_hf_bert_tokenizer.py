"""zoo.convert.hf_bert: a Hugging Face BERT directory's tokenizer gives BertTokenizerFast's ids
under every normaliser setting of tokenizer_config.json (do_lower_case, strip_accents,
tokenize_chinese_chars), from vocab.txt or from the tokenizer.json transformers 5 writes."""

from __future__ import annotations

import itertools
import json

import pytest
from tokenizers import normalizers, pre_tokenizers
from tokenizers.implementations import BertWordPieceTokenizer
from transformers import BertTokenizerFast

from zoo.config import UserError
from zoo.convert.hf_bert import read_hf_tokenizer, tokenizer_config

LINES = [
    "Café naïve RÉSUMÉ Zürich",
    "東京 is Tokyo; 北京是首都",
    "MiXeD CaSe and ÅNGSTRÖM",
    "señor Ñandú über Straße",
    "plain ascii line",
]
SETTINGS = [
    {"do_lower_case": lower, "strip_accents": strip, "tokenize_chinese_chars": chinese}
    for lower, strip, chinese in itertools.product([True, False], [None, True, False], [True, False])
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocabulary() -> list[str]:
    """Every word of LINES as each setting cuts it, plus the single characters (bare and ##),
    so that a setting applied wrongly shows as other ids."""
    words = set()
    for lower, strip, chinese in itertools.product([True, False], [None, True, False], [True, False]):
        normalizer = normalizers.BertNormalizer(
            handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower
        )
        for line in LINES:
            cut = pre_tokenizers.BertPreTokenizer().pre_tokenize_str(normalizer.normalize_str(line))
            words.update(word for word, _ in cut)
    chars = sorted({c for word in words for c in word})
    return SPECIALS + chars + [f"##{c}" for c in chars] + sorted(words - set(chars))


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s.values())))
@pytest.mark.parametrize("source", ["vocab.txt", "tokenizer.json"])
def test_ids_equal_bert_tokenizer_fast_for_each_setting(tmp_path, settings, source):
    (tmp_path / "vocab.txt").write_text("\n".join(vocabulary()) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(settings))
    if source == "tokenizer.json":  # its own normaliser differs: tokenizer_config.json wins
        other = BertWordPieceTokenizer(str(tmp_path / "vocab.txt"), lowercase=not settings["do_lower_case"])
        other._tokenizer.save(str(tmp_path / "tokenizer.json"))
        (tmp_path / "vocab.txt").unlink()
    reference = BertTokenizerFast.from_pretrained(tmp_path)
    ours = read_hf_tokenizer(tmp_path)
    for line in LINES:
        assert ours.encode(line) == reference(line, add_special_tokens=False)["input_ids"], line
    assert {k: v for k, v in tokenizer_config(ours, 8).items() if k in settings} == settings


def test_the_settings_change_the_ids(tmp_path):
    """The probe lines tell every setting apart (so the parity test above is not vacuous)."""
    (tmp_path / "vocab.txt").write_text("\n".join(vocabulary()) + "\n")
    seen = set()
    for settings in SETTINGS:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(settings))
        seen.add(tuple(tuple(read_hf_tokenizer(tmp_path).encode(line)) for line in LINES))
    assert len(seen) == len(SETTINGS) - 4  # strip_accents None follows do_lower_case


def test_a_setting_the_normaliser_cannot_take_is_refused(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(SPECIALS) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"strip_accents": "nfd"}))
    with pytest.raises(UserError, match="strip_accents='nfd'"):
        read_hf_tokenizer(tmp_path)
