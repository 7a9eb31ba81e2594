"""The zoo ViT against timm's VisionTransformer, position resampling, drop path."""

from __future__ import annotations

import pytest
import timm
import torch
from timm.layers import resample_abs_pos_embed
from timm.models.vision_transformer import VisionTransformer

from zoo.config import UserError
from zoo.convert.timm_vit import load_timm_state, timm_to_zoo, vit_from_timm, zoo_to_timm
from zoo.models.vit import ViT, resample_positions
from zoo.train.optim import param_groups


def _perturbed(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """timm initialises norms to (1, 0) and biases to 0; noise everywhere makes a swapped or
    dropped parameter change the logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    return model.eval()


def _timm_logits(timm_model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    """timm expects normalised pixels; the zoo ViT normalises [0, 1] pixels itself."""
    cfg = timm_model.pretrained_cfg
    mean = torch.tensor(cfg["mean"]).view(-1, 1, 1)
    std = torch.tensor(cfg["std"]).view(-1, 1, 1)
    with torch.no_grad():
        return timm_model((images - mean) / std)


def _small_timm(**kwargs) -> VisionTransformer:
    model = VisionTransformer(
        img_size=32, patch_size=4, num_classes=10, embed_dim=48, depth=3, num_heads=3, **kwargs
    )
    model.pretrained_cfg = {"mean": (0.5, 0.4, 0.3), "std": (0.2, 0.25, 0.3)}
    return _perturbed(model)


def small_vit(image_size: int) -> ViT:
    """The 3-layer, 3-head ViT the timm weight tests load into, at `image_size`."""
    return ViT(
        image_size=image_size,
        patch_size=4,
        in_chans=3,
        num_classes=10,
        dim=48,
        encoder_layers=3,
        num_heads=3,
        ffn_dim=192,
        mean=(0.5, 0.4, 0.3),
        std=(0.2, 0.25, 0.3),
    )


# The named architectures; all but the first run at 64 px (timm resizes its position table the
# same way) to keep the test fast.
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("vit_tiny_patch16_224", {}),
        ("vit_tiny_patch16_224", {"global_pool": "avg", "img_size": 64}),
        ("vit_small_patch16_224", {"img_size": 64}),
        ("deit_tiny_patch16_224", {"img_size": 64}),
    ],
)
def test_logits_equal_timm(name: str, kwargs: dict) -> None:
    timm_model = _perturbed(timm.create_model(name, pretrained=False, **kwargs))
    model = vit_from_timm(timm_model).eval()
    size = kwargs.get("img_size", 224)
    images = torch.rand(2, 3, size, size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = model(images)
    assert torch.allclose(ours, _timm_logits(timm_model, images), atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"global_pool": "avg"},
        {"global_pool": "avg", "class_token": False},
    ],
)
def test_logits_equal_timm_small_images(kwargs: dict) -> None:
    timm_model = _small_timm(**kwargs)
    model = vit_from_timm(timm_model).eval()
    images = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = model(images)
    assert torch.allclose(ours, _timm_logits(timm_model, images), atol=1e-5, rtol=0)


def test_export_roundtrip_gives_timm_the_same_model() -> None:
    timm_model = _small_timm()
    model = vit_from_timm(timm_model).eval()
    exported = zoo_to_timm(model.state_dict())
    reference = timm_model.state_dict()
    assert exported.keys() == reference.keys()
    assert all(torch.equal(exported[k], reference[k]) for k in reference)
    fresh = VisionTransformer(img_size=32, patch_size=4, num_classes=10, embed_dim=48, depth=3, num_heads=3)
    fresh.load_state_dict(exported)
    fresh.pretrained_cfg = timm_model.pretrained_cfg
    images = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(model(images), _timm_logits(fresh.eval(), images), atol=1e-5, rtol=0)


def test_unsupported_variants_are_refused_by_name() -> None:
    state = _small_timm(init_values=1e-5).state_dict()  # layer scale
    with pytest.raises(UserError, match="ls1"):
        timm_to_zoo(state)
    # qkv_bias=False drops only the qkv bias; the zoo's `bias` switch is all or nothing.
    with pytest.raises(UserError, match="out_proj.bias"):
        vit_from_timm(_small_timm(qkv_bias=False))


def test_resampling_matches_timm_and_keeps_the_grid() -> None:
    table = torch.randn(1, 1 + 7 * 7, 16)
    ours = resample_positions(table, 1, (10, 10))
    theirs = resample_abs_pos_embed(table, [10, 10], num_prefix_tokens=1)
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert resample_positions(table, 1, (7, 7)) is table
    # A table that is the row index in channel 0 and the column index in channel 1: after
    # resampling, rows must still run down and columns across (no transpose, no flattening slip).
    rows, cols = torch.meshgrid(torch.arange(7.0), torch.arange(7.0), indexing="ij")
    ramp = torch.stack([rows, cols], dim=-1).reshape(1, 49, 2)
    grid = resample_positions(ramp, 0, (12, 12)).reshape(12, 12, 2)
    assert (grid[1:, :, 0] > grid[:-1, :, 0]).all() and (grid[:, 1:, 1] > grid[:, :-1, 1]).all()
    assert torch.allclose(grid[:, :, 0], grid[:, :1, 0].expand(12, 12), atol=1e-5)
    assert torch.allclose(grid[:, :, 1], grid[:1, :, 1].expand(12, 12), atol=1e-5)


def test_other_image_size_equals_timm_dynamic_size() -> None:
    """Running at 48 px a model trained at 32 px equals timm's dynamic-size forward, and a model
    built for 48 px loading the 32-px checkpoint."""
    timm_model = _small_timm()
    dynamic = VisionTransformer(
        img_size=32, patch_size=4, num_classes=10, embed_dim=48, depth=3, num_heads=3, dynamic_img_size=True
    )
    dynamic.load_state_dict(timm_model.state_dict())
    dynamic.pretrained_cfg = timm_model.pretrained_cfg
    model = vit_from_timm(timm_model).eval()
    images = torch.rand(2, 3, 48, 48)
    with torch.no_grad():
        ours = model(images)
    assert torch.allclose(ours, _timm_logits(dynamic.eval(), images), atol=1e-5, rtol=0)
    at_48 = small_vit(48).eval()
    assert load_timm_state(at_48, timm_model.state_dict()) == []
    with torch.no_grad():
        assert torch.allclose(at_48(images), ours, atol=1e-5, rtol=0)


def _tiny(**kwargs) -> ViT:
    return ViT(
        image_size=16,
        patch_size=4,
        in_chans=3,
        num_classes=5,
        dim=32,
        encoder_layers=4,
        num_heads=2,
        ffn_dim=64,
        **kwargs,
    )


def test_eval_mode_makes_drop_path_the_identity() -> None:
    torch.manual_seed(0)
    dropped = _tiny(drop_path_rate=0.5)
    plain = _tiny(drop_path_rate=0.0)
    plain.load_state_dict(dropped.state_dict())
    images = torch.rand(8, 3, 16, 16)
    with torch.no_grad():
        dropped.train()
        assert not torch.allclose(dropped(images), dropped(images))  # it does drop in training
        dropped.eval()
        assert torch.equal(dropped(images), plain.eval()(images))


def test_no_weight_decay_on_positions_class_token_norms_and_biases() -> None:
    model = _tiny()
    decay, no_decay = param_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    skipped = {names[id(p)] for p in no_decay["params"]}
    decayed = {names[id(p)] for p in decay["params"]}
    assert {"pos_embed", "cls_token", "head.bias", "encoder.layers.0.ffn_res.norm.weight"} <= skipped
    assert {"patch_embed.weight", "head.weight", "encoder.layers.0.self_attn.qkv_proj.weight"} <= decayed


def test_avg_pool_without_class_token_and_bad_arguments() -> None:
    model = _tiny(pool="avg", class_token=False)
    assert model.pos_embed.shape == (1, 16, 32)
    assert model(torch.rand(2, 3, 16, 16)).shape == (2, 5)
    with pytest.raises(ValueError, match="class_token"):
        _tiny(pool="token", class_token=False)
    with pytest.raises(ValueError, match="divide"):
        ViT(
            image_size=15,
            patch_size=4,
            in_chans=3,
            num_classes=5,
            dim=32,
            encoder_layers=1,
            num_heads=2,
            ffn_dim=64,
        )


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_pretrained_from_a_local_timm_checkpoint_file(tmp_path, suffix: str) -> None:
    from safetensors.torch import save_file

    from zoo.convert.timm_vit import load_pretrained

    timm_model = _small_timm()
    path = tmp_path / f"vit{suffix}"
    state = {k: v.contiguous() for k, v in timm_model.state_dict().items()}
    if suffix == ".safetensors":
        save_file(state, str(path))
    else:
        torch.save({"model": state}, path)  # timm's training checkpoints nest the weights
    model = small_vit(32).eval()
    assert load_pretrained(model, str(path)) == []
    images = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(model(images), _timm_logits(timm_model, images), atol=1e-5, rtol=0)
    fine_tune = ViT(
        image_size=32,
        patch_size=4,
        in_chans=3,
        num_classes=7,
        dim=48,
        encoder_layers=3,
        num_heads=3,
        ffn_dim=192,
    )
    with pytest.raises(UserError, match=r"head.weight \(10, 48\) vs \(7, 48\)"):
        load_pretrained(fine_tune, str(path))  # strict: a new head only when asked for
    assert load_pretrained(fine_tune, str(path), new_head=True) == ["head.weight", "head.bias"]
    with pytest.raises(UserError, match="not found"):
        load_pretrained(model, str(tmp_path / "missing.safetensors"))
