"""timm VisionTransformer checkpoints <-> zoo ViT, by renaming keys at load time (zoo.convert.keys).

timm's fused `attn.qkv` (3D, D) weight has the layout of our `qkv_proj`, so the conversion is a
pure renaming (plus the position table resampled when the image size differs). Covered: the
plain ViT/DeiT family as timm names it (vit_{tiny,small,base,large}_patch{16,32}_{224,384},
deit_{tiny,small,base}_patch16_*), with class-token or average pooling, and position tables
without a class-token slot (timm's no_embed_class). Loading is strict: distilled DeiT, DeiT-3,
register tokens, layer scale, QK-norm, post-norm (rpn) blocks, q/k/v without biases and
checkpoints of another depth or width are refused by name.

A weights file cannot say its head count, activation or norm epsilon, so loading one assumes the
recipe's: a timm model NAME is checked instead, its architecture built offline by timm
(`create_model(name, pretrained=False)`) and compared with the recipe's model section key by key.
A zoo checkpoint is not timm weights: it is recognised and sent to `--train.init_from`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from zoo.config import UserError
from zoo.convert.hub import cached_file, hub_offline
from zoo.convert.keys import load_strict, rename
from zoo.models.vit import ViT, resample_positions
from zoo.train.checkpoint import load_failure

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
# What zoo's ViT computes and a timm model must too (no recipe key sets them).
ACTIVATION, NORM_EPS = "exact GELU", 1e-6
WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin")
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
    """Refuse timm models that compute something the zoo ViT does not with the same keys: other
    blocks (residual post-norm `rpn`), another activation, another norm epsilon."""
    from timm.models.vision_transformer import Block

    cfg = getattr(timm_model, "pretrained_cfg", None) or {}
    name = cfg.get("architecture") or type(timm_model).__name__
    kinds = {type(block).__name__ for block in timm_model.blocks if type(block) is not Block}
    if kinds:
        raise UserError(f"timm model with {sorted(kinds)} blocks: the zoo ViT has only timm's pre-norm Block")
    acts = {repr(b.mlp.act) for b in timm_model.blocks if not _is_exact_gelu(b.mlp.act)}
    if acts:
        raise UserError(f"timm {name} has activation {sorted(acts)}: zoo's ViT has {ACTIVATION} only")
    eps = {m.eps for m in timm_model.modules() if isinstance(m, nn.LayerNorm)} - {NORM_EPS}
    if eps:
        raise UserError(f"timm {name} has LayerNorm eps {sorted(eps)}: zoo's ViT has eps {NORM_EPS} only")


def _is_exact_gelu(act: nn.Module) -> bool:
    return type(act) is nn.GELU and act.approximate == "none"


def timm_recipe(timm_model: nn.Module) -> dict[str, Any]:
    """The model keys of a ViT recipe (zoo ViT arguments) that a timm VisionTransformer fixes."""
    block = timm_model.blocks[0]
    return {
        "patch_size": timm_model.patch_embed.patch_size[0],
        "in_chans": timm_model.patch_embed.proj.in_channels,
        "num_classes": getattr(timm_model.head, "out_features", 0),  # 0: no head (Identity)
        "dim": timm_model.embed_dim,
        "encoder_layers": len(timm_model.blocks),
        "num_heads": block.attn.num_heads,
        "ffn_dim": block.mlp.fc1.out_features,
        "pool": timm_model.global_pool,
        "class_token": timm_model.cls_token is not None,
        "bias": block.attn.qkv.bias is not None,
    }


def zoo_recipe(model: ViT) -> dict[str, Any]:
    """`timm_recipe`'s keys as the zoo model (built from the recipe) has them."""
    layer = model.encoder.layers[0]
    return {
        "patch_size": model.patch_size,
        "in_chans": model.patch_embed.in_channels,
        "num_classes": model.head.out_features,
        "dim": model.patch_embed.out_channels,
        "encoder_layers": len(model.encoder.layers),
        "num_heads": layer.self_attn.num_heads,
        "ffn_dim": layer.ffn.fc1.out_features,
        "pool": model.pool,
        "class_token": model.cls_token is not None,
        "bias": layer.self_attn.qkv_proj.bias is not None,
    }


def check_recipe(model: ViT, timm_model: nn.Module, name: str, *, new_head: bool = False) -> None:
    """Refuse, in one line naming the keys, a recipe whose model section differs from the timm
    model's architecture (the image size may differ: positions are resampled; the class count
    too with `new_head`)."""
    ours, theirs = zoo_recipe(model), timm_recipe(timm_model)
    if new_head:
        del ours["num_classes"], theirs["num_classes"]
    wrong = [f"model.{k}={ours[k]!r} (timm: {theirs[k]!r})" for k in ours if ours[k] != theirs[k]]
    if wrong:
        raise UserError(f"{name}: the recipe does not match timm's {name}: {', '.join(wrong)}")


def vit_from_timm(timm_model: nn.Module) -> ViT:
    """A zoo ViT with the architecture, weights and normalisation of a timm VisionTransformer."""
    check_timm_model(timm_model)
    cfg = getattr(timm_model, "pretrained_cfg", {}) or {}
    model = ViT(
        image_size=timm_model.patch_embed.img_size[0],
        **timm_recipe(timm_model),
        mean=tuple(cfg.get("mean", (0.5,))),
        std=tuple(cfg.get("std", (0.5,))),
    )
    load_timm_state(model, timm_model.state_dict(), source=type(timm_model).__name__)
    return model


def read_checkpoint_file(path: Path) -> dict[str, Tensor]:
    """A state dict from a .safetensors file or a torch file (tensors only, no pickled code).

    Raises:
        UserError: unreadable, missing, or a zoo checkpoint (not timm weights).
    """
    if path.is_dir():
        raise UserError(
            f"{path}: a directory; model.pretrained takes a timm weights file or model name "
            f"(start from a zoo run with --train.init_from={path})"
        )
    if not path.is_file():
        raise UserError(f"{path}: checkpoint file not found")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # any reader failure means the same thing to the user
        if path.suffix == ".safetensors":
            why = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
            raise UserError(f"{path}: cannot read checkpoint: {why}") from None
        raise UserError(f"{path}: cannot read checkpoint: {load_failure(path, err)}") from None
    zoo_run = "config" in state and isinstance(state.get("model"), dict)  # zoo.train.checkpoint
    schema = state.get("schema", "") if zoo_run else ""
    for key in ("model", "state_dict"):  # timm training checkpoints nest the weights
        if isinstance(state.get(key), dict):
            state = state[key]
    zoo_vit = "pixel_mean" in state  # a buffer only zoo's ViT has
    if zoo_run and not zoo_vit:
        raise UserError(f"{path}: a zoo checkpoint of another task ({schema or 'unnamed'}), not timm weights")
    if zoo_vit:
        raise UserError(
            f"{path}: a zoo ViT checkpoint, not timm weights: start from it with "
            f"--train.init_from={path} (and no model.pretrained)"
        )
    return state


def load_pretrained(model: ViT, source: str, *, new_head: bool = False) -> list[str]:
    """Load timm weights from a local file, or by timm model name (downloads once; offline, the
    Hugging Face cache). A name's architecture is checked against the model first; a file's
    head count, activation and norm epsilon are assumed (one line says so).

    Returns the keys left at their initial values (the head with `new_head`).
    """
    path = Path(source).expanduser()
    if path.suffix in WEIGHT_SUFFIXES or path.exists():
        fresh = load_timm_state(model, read_checkpoint_file(path), new_head=new_head, source=str(path))
        print(
            f"{path}: a weights file does not record these, so they were assumed: "
            f"num_heads={zoo_recipe(model)['num_heads']} from the recipe, {ACTIVATION} and LayerNorm "
            f"eps {NORM_EPS} (zoo's ViT); give the timm model name to have them checked"
        )
        return fresh
    timm_model = _timm_architecture(source)
    check_timm_model(timm_model)
    check_recipe(model, timm_model, source, new_head=new_head)
    fresh = load_timm_state(model, _timm_weights(source, timm_model), new_head=new_head, source=source)
    cfg = timm_model.pretrained_cfg
    model.pixel_mean.copy_(torch.tensor(cfg["mean"]).reshape(-1, 1, 1).expand_as(model.pixel_mean))
    model.pixel_std.copy_(torch.tensor(cfg["std"]).reshape(-1, 1, 1).expand_as(model.pixel_std))
    return fresh


def _timm_architecture(name: str) -> nn.Module:
    """timm's model `name` with random weights: its architecture and pretrained_cfg, offline."""
    import timm

    if name.startswith(("hf-hub:", "hf_hub:")) and hub_offline():
        raise UserError(_no_weights(name, "offline: a hub model's config must be downloaded"))
    try:
        return timm.create_model(name, pretrained=False)
    except Exception as err:  # unknown name, hub errors: one message
        raise UserError(
            f"{name}: neither a checkpoint file ({'/'.join(WEIGHT_SUFFIXES)}) nor a timm model "
            f"name ({type(err).__name__}: {err})"
        ) from None


def _timm_weights(name: str, timm_model: nn.Module) -> dict[str, Tensor]:
    """The pretrained weights of timm's `name`: offline (checked first, so that it fails at
    once), from the Hugging Face cache; online, through timm (downloads once)."""
    import timm

    cfg = timm_model.pretrained_cfg
    if hub_offline():
        repo = cfg.get("hf_hub_id")
        names = [n for n in (cfg.get("hf_hub_filename"), "model.safetensors", "pytorch_model.bin") if n]
        found = cached_file(repo, names) if repo else None
        if found is None:
            raise UserError(_no_weights(name, "offline and not in the Hugging Face cache"))
        return read_checkpoint_file(found)
    try:
        return timm.create_model(name, pretrained=True).state_dict()
    except Exception as err:  # unknown tag, hub errors: one message
        raise UserError(_no_weights(name, f"{type(err).__name__}: {err}")) from None


def _no_weights(name: str, why: str) -> str:
    return f"cannot get timm weights {name!r} ({why}); offline, pass a local checkpoint file instead"
