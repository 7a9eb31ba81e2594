"""timm VisionTransformer checkpoints <-> zoo ViT, by renaming keys at load time.

timm's fused `attn.qkv` (3D, D) weight has the layout of our `qkv_proj`, so the conversion is a
pure renaming (plus the position table resampled when the image size differs). Covered: the
plain ViT/DeiT family as timm names it (vit_{tiny,small,base,large}_patch{16,32}_{224,384},
deit_{tiny,small,base}_patch16_*), with class-token or average pooling. Distilled DeiT, DeiT-3,
register tokens, layer scale and QK-norm have parts the zoo ViT lacks; their keys are refused by
name.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import Tensor, nn

from tasks.vit.model import ViT, resample_positions
from zoo.config import UserError

# (timm pattern, zoo pattern); `{i}` is a block index.
_RENAMES = [
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
_ZOO_ONLY = ("pixel_mean", "pixel_std")


def _pattern(prefix: str) -> re.Pattern:
    return re.compile("^" + re.escape(prefix).replace(re.escape("{i}"), r"(?P<i>\d+)"))


def _rename(key: str, source: int) -> str:
    """Rename one key from side `source` (0 timm, 1 zoo) to the other side."""
    for pair in _RENAMES:
        match = _pattern(pair[source]).match(key)
        if match:
            target = pair[1 - source].replace("{i}", match.groupdict().get("i") or "")
            return target + key[match.end():]
    side = "timm" if source == 0 else "zoo"
    raise KeyError(f"no {side} -> {'zoo' if source == 0 else 'timm'} mapping for key {key!r}")


def timm_to_zoo(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename a timm VisionTransformer state dict to zoo ViT keys (no pixel statistics)."""
    unknown = [k for k in state if not any(_pattern(p[0]).match(k) for p in _RENAMES)]
    if unknown:
        raise UserError(f"unsupported timm ViT variant: no zoo equivalent for {unknown[:5]}")
    return {_rename(k, 0): v for k, v in state.items()}


def zoo_to_timm(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename a zoo ViT state dict to timm VisionTransformer keys (pixel statistics dropped)."""
    return {_rename(k, 1): v for k, v in state.items() if k not in _ZOO_ONLY}


def load_timm_state(model: ViT, state: dict[str, Tensor], *, keep_head: bool = True) -> list[str]:
    """Load a timm state dict into `model`; returns the zoo keys left at their initial values.

    The position table is resampled to the model's grid when the image sizes differ. With
    `keep_head=False`, or when the class count differs (fine-tuning), the head keeps its fresh
    initialisation.
    """
    converted = timm_to_zoo(state)
    converted["pos_embed"] = resample_positions(converted["pos_embed"], model.num_prefix,
                                               (model.grid, model.grid))
    own = model.state_dict()
    head_fits = converted.get("head.weight", torch.empty(0)).shape == own["head.weight"].shape
    if not keep_head or not head_fits:
        converted = {k: v for k, v in converted.items() if not k.startswith("head.")}
    mismatched = [k for k, v in converted.items() if k in own and v.shape != own[k].shape]
    if mismatched:
        raise UserError(f"timm checkpoint does not fit the model config: shapes differ for "
                        f"{mismatched[:5]} (check dim, depth, patch_size, pool, class_token)")
    missing, unexpected = model.load_state_dict(converted, strict=False)
    if unexpected:
        raise UserError(f"timm checkpoint has keys the model lacks: {unexpected[:5]} "
                        f"(check pool, class_token and bias)")
    return [k for k in missing if k not in _ZOO_ONLY]


def vit_from_timm(timm_model: nn.Module) -> ViT:
    """A zoo ViT with the architecture, weights and normalisation of a timm VisionTransformer."""
    block = timm_model.blocks[0]
    cfg = getattr(timm_model, "pretrained_cfg", {}) or {}
    model = ViT(image_size=timm_model.patch_embed.img_size[0],
                patch_size=timm_model.patch_embed.patch_size[0],
                in_chans=timm_model.patch_embed.proj.in_channels,
                num_classes=timm_model.head.out_features, dim=timm_model.embed_dim,
                depth=len(timm_model.blocks), num_heads=block.attn.num_heads,
                ffn_dim=block.mlp.fc1.out_features, pool=timm_model.global_pool,
                class_token=timm_model.cls_token is not None,
                bias=block.attn.qkv.bias is not None,
                mean=tuple(cfg.get("mean", (0.5,))), std=tuple(cfg.get("std", (0.5,))))
    load_timm_state(model, timm_model.state_dict())
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


def load_pretrained(model: ViT, source: str) -> list[str]:
    """Load timm weights from a local file, or by timm model name (downloads; needs internet).

    Returns the keys left at their initial values (the head when the class count differs).
    """
    path = Path(source).expanduser()
    if path.suffix in (".safetensors", ".pth", ".pt", ".bin") or path.exists():
        return load_timm_state(model, read_checkpoint_file(path))
    import timm
    try:
        timm_model = timm.create_model(source, pretrained=True)
    except Exception as err:  # offline, unknown name, hub errors: one message
        raise UserError(f"cannot get timm weights {source!r} ({type(err).__name__}: {err}); "
                        f"offline, pass a local checkpoint file instead") from None
    missing = load_timm_state(model, timm_model.state_dict())
    cfg = timm_model.pretrained_cfg
    model.pixel_mean.copy_(torch.tensor(cfg["mean"]).reshape(-1, 1, 1).expand_as(model.pixel_mean))
    model.pixel_std.copy_(torch.tensor(cfg["std"]).reshape(-1, 1, 1).expand_as(model.pixel_std))
    return missing
