"""Model values checked when the config is read, by the names every zoo model section shares
(one spelling across tasks): a bad value is one line naming its key, before any work starts,
instead of a ValueError from deep inside the blocks. Also a tokenizer checked against the
embedding table of a model loaded for it, which would fail as an index error mid-batch."""

from __future__ import annotations

import dataclasses
from typing import Any

from zoo.blocks import ACTIVATIONS, NORMS, POSITIONS, SCORES
from zoo.config import Invalid, UserError

CHOICES = {"activation": ACTIVATIONS, "norm": NORMS, "positions": POSITIONS, "attention_score": SCORES}
POSITIVE = (
    "dim",
    "num_heads",
    "ffn_dim",
    "max_len",
    "encoder_layers",
    "decoder_layers",
    "num_layers",
    "image_size",
    "patch_size",
    "in_chans",
    "num_classes",
)


def check_model_values(cfg: Any) -> None:
    """Raise zoo.config.Invalid for the first value a model could not be built with.

    Covers the fields `cfg` has among: the POSITIVE sizes, `num_heads` dividing `dim`, every
    `*dropout` and `drop_path_rate` in [0, 1), the table choices (activation, norm,
    positions, attention_score), `position_scale` above 0 and only on sinusoids, `window` and
    `key_dim` >= 1 when set, and restricted attention (`window`) only with the default score and
    key width.
    """
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    for key in POSITIVE:
        if key in values and values[key] < 1:
            raise Invalid(key, f"must be at least 1, not {values[key]}")
    if "dim" in values and "num_heads" in values and values["dim"] % values["num_heads"]:
        raise Invalid("num_heads", f"{values['num_heads']} does not divide dim {values['dim']}")
    for key, value in values.items():
        if (key.endswith("dropout") or key == "drop_path_rate") and not 0.0 <= value < 1.0:
            raise Invalid(key, f"must be in [0, 1), not {value}")
    for key, table in CHOICES.items():
        if key in values and values[key] not in table:
            raise Invalid(key, f"{values[key]!r} is not one of {', '.join(table)}")
    if "position_scale" in values:
        if not values["position_scale"] > 0:
            raise Invalid("position_scale", f"must be above 0, not {values['position_scale']}")
        if values["position_scale"] != 1.0 and values.get("positions") != "sinusoidal":
            raise Invalid(
                "position_scale", f"scales sinusoidal positions; positions is {values.get('positions')!r}"
            )
    if values.get("window") is not None and values["window"] < 1:
        raise Invalid("window", f"must be at least 1 (or null for full attention), not {values['window']}")
    if values.get("key_dim") is not None and values["key_dim"] < 1:
        raise Invalid("key_dim", f"must be at least 1 (or null for dim / num_heads), not {values['key_dim']}")
    if values.get("window") is not None:
        for key, default in (("attention_score", "scaled_dot"), ("key_dim", None)):
            if values.get(key, default) != default:
                raise Invalid(
                    key,
                    f"{values[key]!r} does not combine with window (restricted attention is scaled_dot "
                    "at dim / num_heads)",
                )


def check_vocabulary(
    source: str, tokens: int, embeddings: int, *, pad_ids: tuple[int, int] | None = None
) -> None:
    """Raise zoo.config.UserError naming `source` when a tokenizer of `tokens` ids cannot feed a
    model of `embeddings` rows, or with `pad_ids` (the tokenizer's, the model's) when the two
    pad with different ids."""
    problems = []
    if tokens > embeddings:
        problems.append(f"{tokens:,} tokens, the model's vocabulary only {embeddings:,}")
    if pad_ids is not None and pad_ids[0] != pad_ids[1]:
        problems.append(f"[PAD] {pad_ids[0]}, the model's [PAD] {pad_ids[1]}")
    if problems:
        raise UserError(f"{source}: the tokenizer has {' and '.join(problems)}: they do not belong together")
