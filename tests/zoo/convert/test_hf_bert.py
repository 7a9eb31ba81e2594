"""zoo.convert.hf_bert: zoo BERT against Hugging Face's BertForPreTraining, same weights, same
logits, both ways; directories in and out."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertForPreTraining

from zoo.config import UserError
from zoo.convert.hf_bert import config_from_hf, config_to_hf, read_hf_directory, state_from_hf, state_to_hf
from zoo.models.bert import Bert, BertModelConfig, build_bert

SIZES = [
    dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64),
    dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=4, intermediate_size=80),
    dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=256),
]


def hf_model(size: dict, vocab_size: int = 97, pad_id: int = 0) -> BertForPreTraining:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=vocab_size,
        max_position_embeddings=40,
        pad_token_id=pad_id,
        attn_implementation="sdpa",
        **size,
    )
    model = BertForPreTraining(config).eval()
    with torch.no_grad():  # random biases and norms too, so a misplaced one shows
        for name, param in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    return model


def inputs(vocab_size: int = 97, batch: int = 3, length: int = 17):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab_size, (batch, length), generator=generator)
    types = (torch.arange(length) >= length // 2).long().expand(batch, -1).clone()
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[1, 11:] = False  # a padded row
    ids[1, 11:] = 0
    types[1, 11:] = 0
    return ids, types, mask


def zoo_from(hf: BertForPreTraining) -> Bert:
    cfg, vocab_size, pad_id = config_from_hf(hf.config.to_dict())
    model = build_bert(cfg, vocab_size, pad_id).eval()
    model.load_state_dict(state_from_hf(hf.state_dict()))
    return model


@pytest.mark.parametrize("size", SIZES)
def test_hf_weights_give_hf_logits(size):
    hf = hf_model(size)
    model = zoo_from(hf)
    ids, types, mask = inputs()
    with torch.no_grad():
        expected = hf(input_ids=ids, token_type_ids=types, attention_mask=mask.long())
        got = model(ids, types, mask)
    real = mask  # Hugging Face computes padded rows too; only real positions are defined
    torch.testing.assert_close(got.mlm[real], expected.prediction_logits[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.nsp, expected.seq_relationship_logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("size", SIZES[:2])
def test_zoo_weights_give_the_same_logits_in_hf(size):
    torch.manual_seed(2)
    cfg = BertModelConfig(
        num_layers=size["num_hidden_layers"],
        dim=size["hidden_size"],
        num_heads=size["num_attention_heads"],
        ffn_dim=size["intermediate_size"],
        max_len=40,
    )
    model = build_bert(cfg, 97, 0).eval()
    hf = BertForPreTraining(BertConfig(**config_to_hf(cfg, 97, 0), attn_implementation="sdpa")).eval()
    missing, unexpected = hf.load_state_dict(state_to_hf(model.state_dict()), strict=False)
    assert not unexpected and set(missing) <= {
        "cls.predictions.decoder.weight",  # tied
        "cls.predictions.decoder.bias",
    }
    ids, types, mask = inputs()
    with torch.no_grad():
        expected = model(ids, types, mask)
        got = hf(input_ids=ids, token_type_ids=types, attention_mask=mask.long())
    torch.testing.assert_close(got.prediction_logits[mask], expected.mlm[mask], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.seq_relationship_logits, expected.nsp, atol=1e-5, rtol=1e-5)
    assert state_from_hf(state_to_hf(model.state_dict())).keys() == model.state_dict().keys()


def test_unsupported_variants_and_keys_are_refused_by_name():
    with pytest.raises(UserError, match="hidden_act"):
        config_from_hf({**config_to_hf(BertModelConfig(), 10, 0), "hidden_act": "relu"})
    state = hf_model(SIZES[0]).state_dict()
    state["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = torch.zeros(3)
    with pytest.raises(UserError, match="distance_embedding"):
        state_from_hf(state)


def test_tensorflow_era_norm_names_and_bare_encoder_keys():
    state = hf_model(SIZES[0]).state_dict()
    renamed = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in state.items()
    }
    assert state_from_hf(renamed).keys() == state_from_hf(state).keys()
    bare = {k.removeprefix("bert."): v for k, v in state.items() if k.startswith("bert.")}
    assert set(state_from_hf(bare)) == {
        k for k in state_from_hf(state) if not k.startswith(("mlm_head", "nsp_head"))
    }


def test_a_bare_encoder_directory_loads_encoder_only_with_its_hidden_states(tmp_path):
    """A BertModel directory (what sentence-transformers and most fine-tuned BERTs ship) gives
    BertModel's last layer when the caller reads the encoder alone, and is refused by name
    when the heads are needed."""
    from transformers import BertModel

    encoder = BertModel(hf_model(SIZES[1]).config, add_pooling_layer=False).eval()
    with torch.no_grad():
        for param in encoder.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    encoder.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(92)]) + "\n"
    )
    with pytest.raises(UserError, match="missing keys: .*mlm_head"):
        read_hf_directory(tmp_path)
    loaded = read_hf_directory(tmp_path, encoder_only=True)
    ids, types, mask = inputs()
    with torch.no_grad():
        expected = encoder(input_ids=ids, token_type_ids=types, attention_mask=mask.long()).last_hidden_state
        got = loaded.model.encode(ids, types, mask)
    torch.testing.assert_close(got[mask], expected[mask], atol=1e-5, rtol=1e-5)
