"""timm VisionTransformer checkpoints <-> zoo ViT, by renaming keys at load time (zoo.convert.keys).

timm's fused `attn.qkv` (3D, D) weight has the layout of our `qkv_proj`, so the conversion is a
pure renaming (plus the position table resampled when the image size differs). Covered: the
plain ViT/DeiT family as timm names it (vit_{tiny,small,base,large}_patch{16,32}_{224,384},
deit_{tiny,small,base}_patch16_*), with class-token or average pooling, and position tables
without a class-token slot (timm's no_embed_class). Loading is strict: distilled DeiT, DeiT-3,
register tokens, layer scale, QK-norm, post-norm (rpn) blocks, q/k/v without biases and
checkpoints of another depth or width are refused by name.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import torch
from torch import Tensor, nn

from zoo.config import UserError
from zoo.convert.keys import load_strict, rename
from zoo.models.vit import ViT, resample_positions

# (timm prefix, zoo prefix); `{i}` is a block index.
TIMM_TABLE = [
    ("cls_token", "cls_token"),
    ("pos_embed", "pos_embed"),
    ("patch_embed.proj.", "patch_embed."),
    ("blocks.{i}.norm1.", "encoder.layers.{i}.self_attn_res.norm."),
    ("blocks.{i}.attn.qkv.", "encoder.layers.{i}.self_attn.qkv_proj."),
    ("blocks.{i}.attn.proj.", "encoder.layers.{i}.self_attn.out_proj."),
    ("blocks.{i}.norm2.", "encoder.layers.{i}.ffn_res.norm."),
    ("blocks.{i}.mlp.fc1.", "encoder.layers.{i}.ffn.fc1."),
    ("blocks.{i}.mlp.fc2.", "encoder.layers.{i}.ffn.fc2."),
    ("norm.", "encoder.final_norm."),
    ("fc_norm.", "head_norm."),
    ("head.", "head."),
]
_ZOO_ONLY = ("pixel_mean", "pixel_std")  # timm keeps the normalisation in its pretrained_cfg
_HINT = "check model.dim, encoder_layers, num_heads, ffn_dim, patch_size, pool, class_token, bias"


def timm_to_zoo(state: dict[str, Tensor], *, source: str = "timm checkpoint") -> dict[str, Tensor]:
    """Rename a timm VisionTransformer state dict to zoo ViT keys (no pixel statistics)."""
    return rename(state, TIMM_TABLE, source=source)


def zoo_to_timm(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename a zoo ViT state dict to timm VisionTransformer keys (pixel statistics dropped)."""
    return rename(state, TIMM_TABLE, reverse=True, source="zoo ViT", skip=_ZOO_ONLY)


def _fit_positions(table: Tensor, model: ViT, source: str) -> Tensor:
    """The checkpoint's (1, rows, D) position table on the model's prefix and grid.

    timm's no_embed_class checkpoints add positions to the patches only and then prepend the
    class token; a zero row for the class token computes the same thing in the zoo layout.
    """
    rows, prefix = table.shape[1], model.num_prefix
    if prefix and math.isqrt(rows) ** 2 == rows:
        table = torch.cat([table.new_zeros(1, prefix, table.shape[2]), table], dim=1)
    elif math.isqrt(rows - prefix) ** 2 != rows - prefix:
        raise UserError(
            f"{source}: position table of {rows} rows is not {prefix} class-token "
            f"row(s) plus a square patch grid (check model.class_token)"
        )
    return resample_positions(table, prefix, (model.grid, model.grid))


def _depth(keys: list[str], pattern: str) -> int:
    found = {int(m[1]) for k in keys if (m := re.match(pattern, k))}
    return max(found, default=-1) + 1


def load_timm_state(
    model: ViT, state: dict[str, Tensor], *, new_head: bool = False, source: str = "timm checkpoint"
) -> list[str]:
    """Load a timm state dict into `model` strictly; returns the keys left at their initial
    values (the head with `new_head`).

    Args:
        new_head: fine-tuning: leave out the checkpoint's head and keep the model's fresh one
            (needed when the class count differs).
        source: the file or model name, for error messages.

    Raises:
        UserError: when any key is unused, missing or of another shape (one line naming them).
    """
    converted = timm_to_zoo(state, source=source)
    if "pos_embed" in converted:
        converted["pos_embed"] = _fit_positions(converted["pos_embed"], model, source)
    head = ("head.*",) if new_head else ()
    theirs = _depth(list(converted), r"encoder\.layers\.(\d+)\.")
    ours = len(model.encoder.layers)
    hint = _HINT if theirs == ours else f"the checkpoint has {theirs} blocks, the model {ours}"
    fresh = load_strict(
        model, converted, source=source, allow_missing=_ZOO_ONLY + head, allow_unused=head, hint=hint
    )
    return [k for k in fresh if k not in _ZOO_ONLY]


def check_timm_model(timm_model: nn.Module) -> None:
    """Refuse timm models whose blocks compute something the zoo ViT does not (same keys,
    different function: residual post-norm `rpn` blocks, for example)."""
    from timm.models.vision_transformer import Block

    kinds = {type(block).__name__ for block in timm_model.blocks if type(block) is not Block}
    if kinds:
        raise UserError(f"timm model with {sorted(kinds)} blocks: the zoo ViT has only timm's pre-norm Block")


def vit_from_timm(timm_model: nn.Module) -> ViT:
    """A zoo ViT with the architecture, weights and normalisation of a timm VisionTransformer."""
    check_timm_model(timm_model)
    block = timm_model.blocks[0]
    cfg = getattr(timm_model, "pretrained_cfg", {}) or {}
    model = ViT(
        image_size=timm_model.patch_embed.img_size[0],
        patch_size=timm_model.patch_embed.patch_size[0],
        in_chans=timm_model.patch_embed.proj.in_channels,
        num_classes=timm_model.head.out_features,
        dim=timm_model.embed_dim,
        encoder_layers=len(timm_model.blocks),
        num_heads=block.attn.num_heads,
        ffn_dim=block.mlp.fc1.out_features,
        pool=timm_model.global_pool,
        class_token=timm_model.cls_token is not None,
        bias=block.attn.qkv.bias is not None,
        mean=tuple(cfg.get("mean", (0.5,))),
        std=tuple(cfg.get("std", (0.5,))),
    )
    load_timm_state(model, timm_model.state_dict(), source=type(timm_model).__name__)
    return model


def read_checkpoint_file(path: Path) -> dict[str, Tensor]:
    """A state dict from a .safetensors file or a torch file (tensors only, no pickled code)."""
    if not path.is_file():
        raise UserError(f"{path}: checkpoint file not found")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # any reader failure means the same thing to the user
        raise UserError(f"{path}: cannot read checkpoint: {err}") from None
    for key in ("model", "state_dict"):  # timm training checkpoints nest the weights
        if isinstance(state.get(key), dict):
            state = state[key]
    return state


def load_pretrained(model: ViT, source: str, *, new_head: bool = False) -> list[str]:
    """Load timm weights from a local file, or by timm model name (downloads; needs internet).

    Returns the keys left at their initial values (the head with `new_head`).
    """
    path = Path(source).expanduser()
    if path.suffix in (".safetensors", ".pth", ".pt", ".bin") or path.exists():
        return load_timm_state(model, read_checkpoint_file(path), new_head=new_head, source=str(path))
    import timm

    try:
        timm_model = timm.create_model(source, pretrained=True)
    except Exception as err:  # offline, unknown name, hub errors: one message
        raise UserError(
            f"cannot get timm weights {source!r} ({type(err).__name__}: {err}); "
            f"offline, pass a local checkpoint file instead"
        ) from None
    check_timm_model(timm_model)
    fresh = load_timm_state(model, timm_model.state_dict(), new_head=new_head, source=source)
    cfg = timm_model.pretrained_cfg
    model.pixel_mean.copy_(torch.tensor(cfg["mean"]).reshape(-1, 1, 1).expand_as(model.pixel_mean))
    model.pixel_std.copy_(torch.tensor(cfg["std"]).reshape(-1, 1, 1).expand_as(model.pixel_std))
    return fresh
