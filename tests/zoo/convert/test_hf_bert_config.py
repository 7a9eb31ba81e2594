"""zoo.convert.hf_bert: every field of a Hugging Face BERT config either maps to the model, is
irrelevant to its logits, or refuses the load naming the field. Each case is a directory saved by
transformers with one non-default value; what loads gives `from_pretrained`'s logits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForPreTraining

from zoo.config import UserError
from zoo.convert.hf_bert import HF_CONFIG_FIELDS, read_hf_directory

SIZE = dict(
    vocab_size=61,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=48,
    max_position_embeddings=24,
)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(56)]

# (BertConfig arguments, fields written into config.json afterwards): each loads exactly.
LOADS = {
    "sizes": ({"hidden_size": 48, "num_attention_heads": 3, "intermediate_size": 40}, {}),
    "positions and types": ({"max_position_embeddings": 30, "type_vocab_size": 3}, {}),
    "norm eps": ({"layer_norm_eps": 1e-3}, {}),
    "dropout (eval)": ({"hidden_dropout_prob": 0.3, "attention_probs_dropout_prob": 0.2}, {}),
    "pad id": ({"pad_token_id": 3}, {}),
    "bookkeeping": ({"architectures": ["BertForMaskedLM"], "initializer_range": 0.1}, {}),
    "precision": ({"dtype": "float16"}, {"torch_dtype": "float16", "use_bfloat16": False}),
    "outputs": ({"output_hidden_states": True, "return_dict": False, "chunk_size_feed_forward": 13}, {}),
    "task heads": (
        {"id2label": {0: "a", 1: "b", 2: "c"}, "classifier_dropout": 0.4, "problem_type": "regression"},
        {"finetuning_task": "sst2"},
    ),
    "generation and ids": ({"use_cache": False, "bos_token_id": 2, "eos_token_id": 3}, {"num_beams": 4}),
    "older transformers": ({}, {"gradient_checkpointing": True, "position_embedding_type": "absolute"}),
    "google bert_config": ({}, {"directionality": "bidi", "pooler_type": "first_token_transform"}),
    "model_type absent": ({}, {"model_type": None}),
}
# (BertConfig arguments, fields written afterwards, what the one-line refusal names).
REFUSED = {
    "activation": ({"hidden_act": "gelu_new"}, {}, "hidden_act='gelu_new' in a BERT config"),
    "relu": ({"hidden_act": "relu"}, {}, "hidden_act='relu'"),
    "causal": ({"is_decoder": True}, {}, "is_decoder=True in a BERT config.*causal"),
    "cross-attention": ({}, {"add_cross_attention": True}, "add_cross_attention=True"),
    "encoder-decoder": ({"is_encoder_decoder": True}, {}, "is_encoder_decoder=True"),
    "relative positions": ({}, {"position_embedding_type": "relative_key"}, "position_embedding_type"),
    "pruned heads": ({}, {"pruned_heads": {"0": [1]}}, "pruned_heads="),
    "roberta": ({}, {"model_type": "roberta"}, "model_type='roberta': a RoBERTa model, not BERT"),
    "distilbert": ({}, {"model_type": "distilbert"}, "a DistilBERT model"),
    "old roberta": ({}, {"model_type": None, "architectures": ["RobertaForMaskedLM"]}, "RobertaForMaskedLM"),
    "unknown field": ({}, {"rope_theta": 10000.0}, "unknown BERT config field.*rope_theta"),
    "untied decoder": (
        {"tie_word_embeddings": False},
        {},
        "decoder.weight differs .*tie_word_embeddings=False",
    ),
}


def save(directory: Path, arguments: dict, written: dict) -> Path:
    """A BertForPreTraining with random weights (biases and norms too) saved by transformers,
    then `written` merged into its config.json (None deletes a field)."""
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(**{**SIZE, **arguments}))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    model.save_pretrained(directory)
    config = json.loads((directory / "config.json").read_text())
    config.update(written)
    config = {k: v for k, v in config.items() if v is not None}
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return directory


def assert_same_logits(directory: Path) -> None:
    hf = BertForPreTraining.from_pretrained(directory, dtype=torch.float32, attn_implementation="sdpa").eval()
    ours = read_hf_directory(directory).model
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 61, (2, 13), generator=generator)
    types = (torch.arange(13) >= 6).long().expand(2, -1).clone()
    types[1] = types[1].clamp(max=hf.config.type_vocab_size - 1)
    mask = torch.ones(2, 13, dtype=torch.bool)
    with torch.no_grad():
        expected = hf(input_ids=ids, token_type_ids=types, attention_mask=mask.long(), return_dict=True)
        got = ours(ids, types, mask)
    torch.testing.assert_close(got.mlm, expected.prediction_logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got.nsp, expected.seq_relationship_logits, atol=1e-4, rtol=1e-4)


def test_every_field_of_the_installed_bert_config_is_in_the_table():
    assert set(BertConfig().to_dict()) <= set(HF_CONFIG_FIELDS)


@pytest.mark.parametrize("case", LOADS)
def test_fields_that_map_or_are_irrelevant_load_with_transformers_logits(tmp_path, case):
    assert_same_logits(save(tmp_path, *LOADS[case]))


@pytest.mark.parametrize("case", REFUSED)
def test_fields_the_model_cannot_represent_are_refused_by_name(tmp_path, case):
    arguments, written, names = REFUSED[case]
    with pytest.raises(UserError, match=names) as error:
        read_hf_directory(save(tmp_path, arguments, written))
    assert "\n" not in str(error.value)


def test_an_untied_decoder_that_copies_the_embeddings_loads_with_its_own_bias(tmp_path):
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(**SIZE, tie_word_embeddings=False))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
        model.cls.predictions.decoder.weight.copy_(model.bert.embeddings.word_embeddings.weight)
    model.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    assert_same_logits(tmp_path)


def test_a_tied_config_whose_file_holds_another_decoder_is_refused(tmp_path):
    """transformers 5 unties such a decoder (it warns); zoo's head cannot."""
    from safetensors.torch import load_file, save_file

    save(tmp_path, {}, {})
    state = load_file(str(tmp_path / "model.safetensors"))
    state["cls.predictions.decoder.weight"] = torch.randn_like(
        state["bert.embeddings.word_embeddings.weight"]
    )
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UserError, match="differs from the word embeddings .tie_word_embeddings=True"):
        read_hf_directory(tmp_path)
