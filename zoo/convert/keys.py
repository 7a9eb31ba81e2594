"""Foreign checkpoints <-> zoo models: key renaming both ways, q/k/v fuse and split, strict loading.

A format module (zoo.convert.hf_bert, zoo.convert.timm_vit) describes a foreign layout by a table
of (foreign prefix, zoo prefix) pairs, where `{i}` (or any `{name}`) stands for a run of digits,
such as a layer index:

    TABLE = [("blocks.{i}.attn.qkv.", "encoder.layers.{i}.self_attn.qkv_proj."), ...]

`rename(state, TABLE)` maps foreign keys to zoo keys and `rename(state, TABLE, reverse=True)` the
other way; a key that no pair matches is an error, so an unknown variant is refused by name
instead of being dropped. Checkpoints that store q, k and v as three Linears (BERT) go through
`fuse_qkv` into the (3D, D) `qkv_proj` of `MultiHeadAttention`, and `split_qkv` undoes it.
`load_strict` then requires every key to be used and every parameter and buffer to be filled,
except the ones the caller names.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor, nn

from zoo.config import UserError

RenameTable = Sequence[tuple[str, str]]
QKV = ("q_proj", "k_proj", "v_proj")
FUSED = "qkv_proj"


def _compile(prefix: str) -> re.Pattern:
    """'blocks.{i}.norm1.' -> ^blocks\\.(?P<i>\\d+)\\.norm1\\."""
    parts = re.split(r"\{(\w+)\}", prefix)  # literal, name, literal, name, ...
    body = "".join(re.escape(p) if n % 2 == 0 else rf"(?P<{p}>\d+)" for n, p in enumerate(parts))
    return re.compile("^" + body)


def _shorten(keys: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def rename_key(key: str, table: RenameTable, *, reverse: bool = False) -> str | None:
    """The key's name on the other side (foreign -> zoo, or zoo -> foreign with `reverse`);
    None when no pair of the table matches."""
    source, target = (1, 0) if reverse else (0, 1)
    for pair in table:
        match = _compile(pair[source]).match(key)
        if match:
            return pair[target].format(**match.groupdict()) + key[match.end() :]
    return None


def rename(
    state: dict[str, Tensor],
    table: RenameTable,
    *,
    reverse: bool = False,
    source: str = "checkpoint",
    skip: Iterable[str] = (),
) -> dict[str, Tensor]:
    """Every key of `state` renamed through `table`.

    Args:
        reverse: rename zoo keys to foreign ones (export) instead of foreign keys to zoo ones.
        source: the file or model name, for the error message.
        skip: glob patterns of keys to leave out (zoo-only buffers on export, for example).

    Raises:
        UserError: naming the keys that no pair matches (a variant the table does not model).
    """
    out, unknown = {}, []
    for key, value in state.items():
        if any(fnmatch.fnmatchcase(key, p) for p in skip):
            continue
        new = rename_key(key, table, reverse=reverse)
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    if unknown:
        raise UserError(
            f"{source}: no {'foreign' if reverse else 'zoo'} equivalent for keys "
            f"{_shorten(unknown)} (a variant this model does not have)"
        )
    return out


def fuse_qkv(
    state: dict[str, Tensor], names: tuple[str, str, str] = QKV, fused: str = FUSED
) -> dict[str, Tensor]:
    """Concatenate every `<p>.q_proj.{weight,bias}`, `<p>.k_proj...`, `<p>.v_proj...` triple into
    `<p>.qkv_proj...` (rows in q, k, v order: the layout of `MultiHeadAttention.qkv_proj`).

    Raises:
        UserError: when a triple is incomplete.
    """
    out = dict(state)
    pattern = re.compile(rf"^(?P<prefix>.*\.)?{re.escape(names[0])}\.(?P<param>\w+)$")
    for key in state:
        match = pattern.match(key)
        if not match:
            continue
        prefix, param = match["prefix"] or "", match["param"]
        parts = [f"{prefix}{name}.{param}" for name in names]
        absent = [p for p in parts if p not in state]
        if absent:
            raise UserError(f"cannot fuse q/k/v into {prefix}{fused}.{param}: missing {absent}")
        out[f"{prefix}{fused}.{param}"] = torch.cat([state[p] for p in parts])
        for p in parts:
            del out[p]
    return out


def split_qkv(
    state: dict[str, Tensor], names: tuple[str, str, str] = QKV, fused: str = FUSED
) -> dict[str, Tensor]:
    """The inverse of `fuse_qkv`: every `<p>.qkv_proj.X` becomes three equal row blocks."""
    out = {}
    pattern = re.compile(rf"^(?P<prefix>.*\.)?{re.escape(fused)}\.(?P<param>\w+)$")
    for key, value in state.items():
        match = pattern.match(key)
        if not match:
            out[key] = value
            continue
        for name, block in zip(names, value.chunk(3, dim=0)):
            out[f"{match['prefix'] or ''}{name}.{match['param']}"] = block
    return out


def _matches(key: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def load_strict(
    model: nn.Module,
    state: dict[str, Tensor],
    *,
    source: str,
    allow_missing: Sequence[str] = (),
    allow_unused: Sequence[str] = (),
    hint: str = "",
) -> list[str]:
    """Copy `state` (already in zoo names) into `model`, refusing anything that does not fit.

    Every key of `state` must fill a parameter or buffer of the same shape, and every parameter
    and buffer must be filled, except keys matched by the glob patterns the caller names.

    Args:
        source: the checkpoint's file or name, for the error message.
        allow_missing: model keys that may keep their current values (a new head when
            fine-tuning, buffers the foreign format lacks).
        allow_unused: checkpoint keys that may be left out (the old head when fine-tuning).
        hint: appended to the error message (which config keys to check, for example).

    Returns:
        The model keys that kept their current values (all matched by `allow_missing`).

    Raises:
        UserError: one line naming `source` and the unused, missing or mismatched keys.
    """
    own = model.state_dict()
    unused = [k for k in state if k not in own and not _matches(k, allow_unused)]
    wrong = [
        k for k in state if k in own and state[k].shape != own[k].shape and not _matches(k, allow_unused)
    ]
    shapes = [f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in wrong]
    filled = {k: v for k, v in state.items() if k in own and v.shape == own[k].shape}
    fresh = [k for k in own if k not in filled]
    missing = [k for k in fresh if k not in wrong and not _matches(k, allow_missing)]
    problems = [
        f"{label}: {_shorten(keys)}"
        for label, keys in (("unused keys", unused), ("shapes differ", shapes), ("missing keys", missing))
        if keys
    ]
    if problems:
        raise UserError(
            f"{source}: does not fit the model; " + "; ".join(problems) + (f" ({hint})" if hint else "")
        )
    model.load_state_dict(filled, strict=False)
    return fresh
