"""zoo.convert.hf_gpt2: zoo GPT against Hugging Face's GPT2LMHeadModel, same weights, same
logits, both ways; directories in and out; every config.json field maps, is irrelevant or is
refused by name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

from zoo.config import UserError
from zoo.convert.hf_gpt2 import (
    HF_CONFIG_FIELDS,
    config_from_hf,
    config_to_hf,
    hf_model_of,
    load_hf_gpt2,
    read_hf_directory,
    state_from_hf,
    state_to_hf,
    write_hf_directory,
)
from zoo.data.bpe import ByteBPETokenizer
from zoo.models.gpt import GPT, GPTModelConfig, build_gpt

VOCAB = 71
CONFIGS = {
    "1 layer 1 head": GPTModelConfig(num_layers=1, dim=32, num_heads=1, max_len=24),
    "2 layers n_inner": GPTModelConfig(num_layers=2, dim=48, num_heads=3, ffn_dim=40, max_len=24),
    "3 layers eps": GPTModelConfig(num_layers=3, dim=64, num_heads=4, max_len=32, norm_eps=1e-3),
    "wide exact gelu": GPTModelConfig(num_layers=2, dim=96, num_heads=4, max_len=20, activation="gelu"),
}


def random_gpt(cfg: GPTModelConfig, vocab_size: int = VOCAB, seed: int = 0) -> GPT:
    """A zoo GPT with every weight random (biases and norms too, so a misplaced one shows)."""
    torch.manual_seed(seed)
    model = build_gpt(cfg, vocab_size).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return model


def random_ids(batch: int = 3, length: int = 13, vocab_size: int = VOCAB) -> torch.Tensor:
    return torch.randint(0, vocab_size, (batch, length), generator=torch.Generator().manual_seed(1))


def hf_logits(hf: GPT2LMHeadModel, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    with torch.no_grad():
        return hf(input_ids=ids, **kwargs).logits


def byte_bpe(vocab_size: int = 300) -> ByteBPETokenizer:
    corpus = ["the cat sat on the mat", "the dog ate the cat's hat", "a mat, a hat, a cat!"] * 20
    return ByteBPETokenizer.train(corpus, vocab_size, min_frequency=1)


@pytest.mark.parametrize("name", CONFIGS)
def test_hf_model_of_gives_the_zoo_logits(name):
    model = random_gpt(CONFIGS[name])
    ids = random_ids()
    with torch.no_grad():
        expected = model(ids)
    hf = hf_model_of(model)
    assert not hf.training and hf.dtype == torch.float32
    torch.testing.assert_close(hf_logits(hf, ids), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", CONFIGS)
def test_left_padded_batches_give_hf_logits_at_real_positions(name):
    """Rows padded on the left, positions counted from each row's first real token."""
    model = random_gpt(CONFIGS[name])
    ids = random_ids(length=11)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, :4] = False
    mask[2, :9] = False
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        got = model(ids, key_mask=mask, positions=positions)
    expected = hf_logits(hf_model_of(model), ids, attention_mask=mask.long(), position_ids=positions)
    torch.testing.assert_close(got[mask], expected[mask], atol=1e-4, rtol=1e-4)


def test_state_dicts_round_trip_both_ways():
    model = random_gpt(CONFIGS["2 layers n_inner"])
    hf = hf_model_of(model)
    state = state_from_hf(hf.state_dict())  # with the tied lm_head that save_pretrained leaves out
    assert state.keys() == model.state_dict().keys()
    for key, value in model.state_dict().items():
        assert torch.equal(state[key], value), key
    assert state_to_hf(state).keys() == hf.state_dict().keys() - {"lm_head.weight"}


def test_bare_gpt2model_keys_and_old_mask_buffers_load():
    """The hub's gpt2 checkpoints: GPT2Model keys without "transformer.", with attn.bias buffers."""
    model = random_gpt(CONFIGS["1 layer 1 head"])
    state = {k.removeprefix("transformer."): v for k, v in state_to_hf(model.state_dict()).items()}
    state["h.0.attn.bias"] = torch.ones(1, 1, 24, 24).tril()
    state["h.0.attn.masked_bias"] = torch.tensor(-1e4)
    loaded = state_from_hf(state)
    for key, value in model.state_dict().items():
        assert torch.equal(loaded[key], value), key


def test_unknown_keys_are_refused_in_one_line():
    state = state_to_hf(random_gpt(CONFIGS["1 layer 1 head"]).state_dict())
    state["multiple_choice_head.summary.weight"] = torch.zeros(1, 32)
    with pytest.raises(UserError, match="multiple_choice_head.summary.weight") as error:
        state_from_hf(state)
    assert "\n" not in str(error.value)


def test_configs_round_trip():
    for cfg in CONFIGS.values():
        hf = config_to_hf(cfg, VOCAB, eot_id=3)
        GPT2Config(**hf)  # transformers takes it
        assert config_from_hf(hf) == (cfg, VOCAB)


def test_a_model_without_biases_is_refused_on_export():
    with pytest.raises(UserError, match="model.bias=False"):
        config_to_hf(GPTModelConfig(num_layers=1, dim=32, num_heads=2, bias=False), VOCAB, eot_id=0)


def save_hf(directory: Path, arguments: dict | None = None, written: dict | None = None) -> Path:
    """A GPT2LMHeadModel with random weights (biases and norms too) saved by transformers, then
    `written` merged into its config.json (None deletes a field)."""
    torch.manual_seed(0)
    size = dict(
        vocab_size=VOCAB, n_positions=24, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(GPT2Config(**{**size, **(arguments or {})}))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    model.save_pretrained(directory)
    config = {**json.loads((directory / "config.json").read_text()), **(written or {})}
    (directory / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    return directory


def as_pytorch_bin(directory: Path) -> None:
    """Replace model.safetensors by a pytorch_model.bin as the hub's gpt2 stores it: bare
    GPT2Model keys, old transformers' causal-mask buffers."""
    state = {
        k.removeprefix("transformer."): v for k, v in load_file(str(directory / "model.safetensors")).items()
    }
    n_positions = json.loads((directory / "config.json").read_text())["n_positions"]
    for key in [k for k in state if k.endswith("attn.c_attn.weight")]:
        state[key.replace("c_attn.weight", "bias")] = torch.ones(1, 1, n_positions, n_positions).tril()
    torch.save(state, directory / "pytorch_model.bin")
    (directory / "model.safetensors").unlink()


def assert_same_logits(directory: Path) -> None:
    # The eager kernel: the one that reads reorder_and_upcast_attn.
    hf = GPT2LMHeadModel.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
    model = read_hf_directory(directory).model
    ids = random_ids(length=17)
    with torch.no_grad():
        got = model(ids)
    torch.testing.assert_close(got, hf_logits(hf, ids), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_a_transformers_directory_loads_with_its_logits(tmp_path, weights):
    directory = save_hf(tmp_path)
    if weights == "pytorch_model.bin":
        as_pytorch_bin(directory)
    assert_same_logits(directory)
    loaded = load_hf_gpt2(str(directory))
    assert (loaded.vocab_size, loaded.directory, loaded.config.dim) == (VOCAB, directory, 48)


class Payload:
    """A pickled object whose loading runs code: it would create the folder `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.makedirs, (str(self.marker),)


def test_a_pytorch_bin_holding_more_than_tensors_is_refused_unrun(tmp_path):
    """The .bin is read with weights_only=True: a pickle that calls a function is refused by name
    of the file, and the function never runs."""
    directory = save_hf(tmp_path / "hf")
    as_pytorch_bin(directory)
    state = torch.load(directory / "pytorch_model.bin", weights_only=True)
    marker = tmp_path / "ran"
    torch.save({**state, "payload": Payload(marker)}, directory / "pytorch_model.bin")
    with pytest.raises(
        UserError, match="pytorch_model.bin: cannot read weights.*GLOBAL os.makedirs"
    ) as error:
        load_hf_gpt2(str(directory))
    assert "\n" not in str(error.value)  # one line, naming what the file would have run
    assert not marker.exists()


def test_an_exported_directory_loads_in_transformers_with_the_zoo_logits_and_ids(tmp_path):
    cfg = CONFIGS["2 layers n_inner"]
    tokenizer = byte_bpe()
    model = random_gpt(cfg, tokenizer.vocab_size)
    out = write_hf_directory(model, cfg, tokenizer, tmp_path / "out")
    assert "lm_head.weight" not in load_file(str(out / "model.safetensors"))  # tied: stored once
    hf = GPT2LMHeadModel.from_pretrained(out, dtype=torch.float32).eval()
    generation = hf.generation_config
    assert {hf.config.eos_token_id, generation.bos_token_id, generation.eos_token_id} == {tokenizer.eot_id}
    text = "the cat's hat sat on a dog<|endoftext|>"
    ids = torch.tensor([tokenizer.encode(text)])
    assert AutoTokenizer.from_pretrained(out)(text)["input_ids"] == ids[0].tolist()
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(hf_logits(hf, ids), expected, atol=1e-4, rtol=1e-4)
    loaded = read_hf_directory(out)
    assert loaded.config == cfg
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[key], value), key


def test_an_uncached_hub_name_fails_at_once_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="'zoo-test/no-such-gpt2' .*offline and not in the cache") as error:
        load_hf_gpt2("zoo-test/no-such-gpt2")
    assert "\n" not in str(error.value)


# (GPT2Config arguments, fields written into config.json afterwards): each loads exactly.
LOADS = {
    "n_inner": ({"n_inner": 40}, {}),
    "norm eps": ({"layer_norm_epsilon": 1e-3}, {}),
    "exact gelu": ({"activation_function": "gelu"}, {}),
    "gelu_pytorch_tanh": ({"activation_function": "gelu_pytorch_tanh"}, {}),
    "relu": ({"activation_function": "relu"}, {}),
    "dropout (eval)": ({"resid_pdrop": 0.3, "embd_pdrop": 0.2, "attn_pdrop": 0.0}, {}),
    "upcast attention": ({"reorder_and_upcast_attn": True}, {}),
    "generation and ids": ({"use_cache": False, "pad_token_id": 1}, {"task_specific_params": {"a": 1}}),
    "double heads fields": ({"summary_type": "last", "summary_use_proj": False}, {}),
    "old hub gpt2 fields": ({}, {"n_ctx": 24, "output_past": True, "n_special": 0, "_num_labels": 1}),
    "outputs": ({"output_hidden_states": True}, {"output_attentions": False}),
    "model_type absent": ({}, {"model_type": None}),
}
# (GPT2Config arguments, fields written afterwards, what the one-line refusal names).
REFUSED = {
    "activation": ({"activation_function": "silu"}, {}, "activation_function='silu' in a GPT-2 config"),
    "inverse layer scaling": (
        {"scale_attn_by_inverse_layer_idx": True},
        {},
        "scale_attn_by_inverse_layer_idx=True",
    ),
    "unscaled": ({"scale_attn_weights": False}, {}, "scale_attn_weights=False"),
    "cross-attention": ({"add_cross_attention": True}, {}, "add_cross_attention=True"),
    "pruned heads": ({}, {"pruned_heads": {"0": [1]}}, "pruned_heads="),
    "bert": ({}, {"model_type": "bert"}, "model_type='bert': a BERT model, not GPT-2"),
    "old other": (
        {},
        {"model_type": None, "architectures": ["OpenAIGPTLMHeadModel"]},
        "OpenAIGPTLMHeadModel",
    ),
    "unknown field": ({}, {"rope_theta": 10000.0}, "unknown GPT-2 config field.*rope_theta"),
    "untied lm_head": (
        {"tie_word_embeddings": False},
        {},
        "lm_head.weight differs .*tie_word_embeddings=False",
    ),
}


def test_every_field_of_the_installed_gpt2_config_is_in_the_table():
    assert set(GPT2Config().to_dict()) <= set(HF_CONFIG_FIELDS)


@pytest.mark.parametrize("case", LOADS)
def test_fields_that_map_or_are_irrelevant_load_with_transformers_logits(tmp_path, case):
    assert_same_logits(save_hf(tmp_path, *LOADS[case]))


@pytest.mark.parametrize("case", REFUSED)
def test_fields_the_model_cannot_represent_are_refused_by_name(tmp_path, case):
    arguments, written, names = REFUSED[case]
    with pytest.raises(UserError, match=names) as error:
        read_hf_directory(save_hf(tmp_path, arguments, written))
    assert "\n" not in str(error.value)


def test_an_untied_lm_head_that_copies_the_embeddings_loads(tmp_path):
    directory = save_hf(tmp_path, {"tie_word_embeddings": False})
    state = load_file(str(directory / "model.safetensors"))
    state["lm_head.weight"] = state["transformer.wte.weight"].clone()
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    assert_same_logits(directory)


def test_untied_without_an_lm_head_is_refused(tmp_path):
    directory = save_hf(tmp_path, {"tie_word_embeddings": False})
    state = load_file(str(directory / "model.safetensors"))
    del state["lm_head.weight"]
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UserError, match="tie_word_embeddings=False and no lm_head.weight"):
        read_hf_directory(directory)


def test_missing_weights_are_refused_by_name(tmp_path):
    directory = save_hf(tmp_path)
    state = load_file(str(directory / "model.safetensors"))
    del state["transformer.h.1.mlp.c_fc.bias"]
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UserError, match=r"missing keys: blocks\.layers\.1\.ffn\.fc1\.bias") as error:
        read_hf_directory(directory)
    assert "\n" not in str(error.value)
