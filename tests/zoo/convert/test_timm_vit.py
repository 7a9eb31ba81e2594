"""Foreign ViT checkpoints that the zoo ViT does not model are refused in one line, never
loaded into silently wrong logits; a position table without a class-token slot loads exactly."""

from __future__ import annotations

import pytest
import torch
from timm.models.vision_transformer import ResPostBlock, VisionTransformer

from zoo.config import UserError
from zoo.convert.timm_vit import load_timm_state, vit_from_timm
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
