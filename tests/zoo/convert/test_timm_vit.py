"""Foreign ViT checkpoints that the zoo ViT does not model are refused in one line, never
loaded into silently wrong logits; a position table without a class-token slot loads exactly."""

from __future__ import annotations

import pytest
import torch
from timm.models.vision_transformer import ResPostBlock, VisionTransformer

from zoo.config import UserError
from zoo.convert.timm_vit import load_pretrained, load_timm_state, vit_from_timm
from zoo.models.vit import ViT


def _timm(**kwargs) -> VisionTransformer:
    torch.manual_seed(0)
    model = VisionTransformer(
        img_size=32, patch_size=4, num_classes=10, embed_dim=48, num_heads=3, **{"depth": 3, **kwargs}
    )
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.pretrained_cfg = {"mean": (0.5,), "std": (0.5,)}
    return model.eval()


def _zoo(**kwargs) -> ViT:
    args = dict(
        image_size=32,
        patch_size=4,
        in_chans=3,
        num_classes=10,
        dim=48,
        encoder_layers=3,
        num_heads=3,
        ffn_dim=192,
    )
    return ViT(**{**args, **kwargs})


def test_average_pooling_with_fc_norm_needs_pool_avg() -> None:
    state = _timm(global_pool="avg").state_dict()  # norm moves to fc_norm after the pooling
    with pytest.raises(
        UserError,
        match=r"unused keys: head_norm.weight.*missing keys: "
        r"encoder.final_norm.weight.*pool",
    ):
        load_timm_state(_zoo(pool="token"), state)
    assert load_timm_state(_zoo(pool="avg"), state) == []


def test_token_pooling_checkpoint_into_an_avg_model_is_refused() -> None:
    with pytest.raises(UserError, match="unused keys: encoder.final_norm.weight"):
        load_timm_state(_zoo(pool="avg"), _timm().state_dict())


def test_post_norm_rpn_blocks_are_refused() -> None:
    # Same keys as the pre-norm Block: only the module type tells them apart.
    rpn = _timm(block_fn=ResPostBlock, global_pool="avg", class_token=False)
    with pytest.raises(UserError, match="ResPostBlock"):
        vit_from_timm(rpn)
    # timm's rpn checkpoints have q/k/v without biases: a state dict alone is refused by that.
    rpn = _timm(block_fn=ResPostBlock, global_pool="avg", class_token=False, qkv_bias=False)
    with pytest.raises(UserError, match="missing keys: encoder.layers.0.self_attn.qkv_proj.bias"):
        load_timm_state(_zoo(pool="avg", class_token=False), rpn.state_dict())


@pytest.mark.parametrize("theirs,ours", [(5, 3), (2, 3)])
def test_a_checkpoint_of_another_depth_is_refused_naming_both(theirs: int, ours: int) -> None:
    with pytest.raises(UserError, match=f"the checkpoint has {theirs} blocks, the model {ours}"):
        load_timm_state(_zoo(encoder_layers=ours), _timm(depth=theirs).state_dict())


def test_position_table_without_class_token_slot_loads_exactly() -> None:
    timm_model = _timm(no_embed_class=True)
    assert timm_model.pos_embed.shape[1] == 64  # patches only: the class token gets no position
    model = vit_from_timm(timm_model).eval()
    images = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        expected = timm_model((images - 0.5) / 0.5)
        torch.testing.assert_close(model(images), expected, rtol=0, atol=1e-5)
    # resampled to another image size too
    at_48 = _zoo(image_size=48, mean=(0.5,), std=(0.5,))
    assert load_timm_state(at_48, timm_model.state_dict()) == []


def test_a_position_table_that_fits_no_grid_is_one_line() -> None:
    state = _timm().state_dict()
    state["pos_embed"] = state["pos_embed"][:, :60]
    with pytest.raises(UserError, match="position table of 60 rows"):
        load_timm_state(_zoo(), state)


def test_another_activation_or_norm_epsilon_is_refused() -> None:
    """Same keys and shapes, other logits: only the built timm model tells."""
    from functools import partial

    from timm.layers import QuickGELU

    with pytest.raises(UserError, match="activation .*QuickGELU.*exact GELU"):
        vit_from_timm(_timm(act_layer=QuickGELU))
    with pytest.raises(UserError, match=r"LayerNorm eps \[1e-05\]"):
        vit_from_timm(_timm(norm_layer=partial(torch.nn.LayerNorm, eps=1e-5)))


TINY = dict(  # timm's vit_tiny_patch16_224, as a recipe's model section
    image_size=224,
    patch_size=16,
    in_chans=3,
    num_classes=1000,
    dim=192,
    encoder_layers=12,
    num_heads=3,
    ffn_dim=768,
)


def test_a_timm_name_is_checked_against_the_recipe_key_by_key() -> None:
    with pytest.raises(UserError, match=r"model.num_heads=4 \(timm: 3\), model.pool='avg' \(timm: 'token'\)"):
        load_pretrained(_zoo(**{**TINY, "num_heads": 4, "pool": "avg"}), "vit_tiny_patch16_224")
    with pytest.raises(UserError, match="neither a checkpoint file .* nor a timm model name"):
        load_pretrained(_zoo(), "no_such_vit_model")


def test_offline_a_timm_name_fails_at_once_or_loads_from_the_cache(monkeypatch, tmp_path) -> None:
    """HF_HUB_OFFLINE: no download is tried (timm's hub retries take ~50 s); a cached file loads."""
    import timm

    import zoo.convert.timm_vit as timm_vit

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    create = timm.create_model
    tried = []
    monkeypatch.setattr(timm, "create_model", lambda *a, **k: tried.append(k) or create(*a, **k))
    monkeypatch.setattr(timm_vit, "cached_file", lambda repo, names: None)
    with pytest.raises(UserError, match="cannot get timm weights 'vit_tiny_patch16_224' .offline"):
        load_pretrained(_zoo(**TINY), "vit_tiny_patch16_224")
    assert all(not k.get("pretrained") for k in tried)

    torch.manual_seed(0)
    reference = create("vit_tiny_patch16_224", pretrained=False).eval()
    torch.save(reference.state_dict(), tmp_path / "pytorch_model.bin")
    monkeypatch.setattr(timm_vit, "cached_file", lambda repo, names: tmp_path / "pytorch_model.bin")
    model = _zoo(**TINY).eval()
    assert load_pretrained(model, "vit_tiny_patch16_224") == []
    images = torch.rand(1, 3, 224, 224)
    with torch.no_grad():
        torch.testing.assert_close(model(images), reference((images - 0.5) / 0.5), rtol=0, atol=1e-4)


def test_a_weights_file_says_what_it_assumed(tmp_path, capsys) -> None:
    path = tmp_path / "vit.pth"
    torch.save(_timm().state_dict(), path)
    assert load_pretrained(_zoo(pool="token"), str(path)) == []
    assert (
        "assumed: num_heads=3 from the recipe, exact GELU and LayerNorm eps 1e-06" in capsys.readouterr().out
    )


@pytest.mark.parametrize("form", ["run checkpoint", "safetensors"])
def test_a_zoo_checkpoint_is_sent_to_init_from(tmp_path, form: str) -> None:
    from safetensors.torch import save_file

    state = _zoo().state_dict()
    if form == "safetensors":
        path = tmp_path / "vit.safetensors"
        save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    else:
        path = tmp_path / "step_10.pt"
        torch.save({"model": state, "config": "model: {}\n", "step": 10}, path)
    with pytest.raises(
        UserError, match=f"a zoo ViT checkpoint, not timm weights: .*--train.init_from={path}"
    ):
        load_pretrained(_zoo(), str(path))
    with pytest.raises(UserError, match="a directory; .*--train.init_from"):
        load_pretrained(_zoo(), str(tmp_path))


def test_a_zoo_checkpoint_of_another_task_is_named_as_such(tmp_path) -> None:
    path = tmp_path / "best.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "config": "", "schema": "tasks.gpt.config.GPTConfig"}, path)
    with pytest.raises(
        UserError, match=r"best\.pt: a zoo checkpoint of another task \(tasks\.gpt\.config\.GPTConfig\)"
    ):
        load_pretrained(_zoo(), str(path))


@pytest.mark.parametrize("name", ["rand.pt", "rand.safetensors"])
def test_an_unreadable_weights_file_is_one_line_naming_it(tmp_path, name: str) -> None:
    """Random bytes: one line that names the file, without torch's advice about weights_only."""
    from zoo.convert.timm_vit import read_checkpoint_file

    path = tmp_path / name
    path.write_bytes(
        bytes(torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(0)).tolist())
    )
    with pytest.raises(UserError) as info:
        read_checkpoint_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: cannot read checkpoint: ") and "\n" not in message
    assert "weights_only" not in message and "https://" not in message


def test_an_unreadable_weights_file_exits_2_in_one_line_from_the_cli(tmp_path) -> None:
    from tests.faults.clirun import assert_refused, run

    path = tmp_path / "rand.pt"
    path.write_bytes(bytes(range(256)) * 16)
    result = run("tasks.vit.train", f"--model.pretrained={path}", "--train.threads=1",
                 f"--train.out_dir={tmp_path / 'run'}")  # fmt: skip
    assert_refused(result)
    assert result.stderr.strip() == (
        f"error: {path}: cannot read checkpoint: "
        "not a checkpoint: neither a torch zip archive nor a torch pickle"
    )
