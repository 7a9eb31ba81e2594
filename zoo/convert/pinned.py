"""Pretrained BERT weights pinned by their SHA-256: a recipe names a local Hugging Face directory
and the hash of its model.safetensors (the official release's), checked before the weights are
read, so a run never trains on other weights under the recipe's name. Any task that starts from
a pretrained BERT reads it here (the parser's reader, the fine-tuning task)."""

from __future__ import annotations

from pathlib import Path

from zoo.config import UserError
from zoo.convert.hf_bert import LoadedBert, load_hf_bert
from zoo.data.fetch import sha256_of

WEIGHTS_FILE = "model.safetensors"  # what the pinned hash is the hash of


def check_sha256(directory: str | Path, sha256: str, *, key: str) -> None:
    """Refuse `directory` unless its model.safetensors hashes to `sha256` (any case).

    Args:
        key: the recipe key that holds the hash, named in the refusal.

    Raises:
        UserError: the directory has no model.safetensors to check, or its SHA-256 differs.
    """
    weights = Path(directory).expanduser() / WEIGHTS_FILE
    if not weights.is_file():
        raise UserError(
            f"{key} is set but {weights} is not a file (the check needs a local directory "
            f"holding {WEIGHTS_FILE})"
        )
    digest = sha256_of(weights)
    if digest != sha256.lower():
        raise UserError(
            f"{weights}: SHA-256 {digest}, expected {sha256.lower()} ({key}): not the weights the "
            "recipe names; refusing to use them"
        )


def load_pinned_hf_bert(source: str, sha256: str = "", *, key: str, encoder_only: bool = False) -> LoadedBert:
    """The Hugging Face BERT `source` (a directory or hub name, as zoo.convert.hf_bert.load_hf_bert
    reads it), its weights checked against `sha256` first when that is set ('' = unchecked)."""
    if sha256:
        check_sha256(source, sha256, key=key)
    return load_hf_bert(source, encoder_only=encoder_only)
