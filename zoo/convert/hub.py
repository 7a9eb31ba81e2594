"""Hugging Face hub snapshots: the files of a model repository, downloaded once into the Hugging
Face cache (needs internet the first time; later runs read the cache).

Beside the converters rather than in zoo.data.fetch: what comes down is a checkpoint in a foreign
layout, named by the hub's own scheme, and only a converter (zoo.convert.hf_bert) reads it;
zoo.data.fetch is plain resumable URL downloads of data sets and knows no hub.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from zoo.config import UserError

# A hub repository name: bert-base-uncased, google/bert_uncased_L-2_H-128_A-2.
HUB_NAME = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def snapshot(repo_id: str, files: Sequence[str]) -> Path:
    """The local folder holding the hub snapshot of `repo_id`, restricted to `files` (names or
    glob patterns; those the repository lacks are skipped).

    Raises:
        UserError: offline, unknown name or any hub error, in one line.
    """
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(files)))
    except Exception as err:  # offline, unknown name, hub errors: one message
        raise UserError(
            f"cannot download {repo_id!r} from the Hugging Face hub "
            f"({type(err).__name__}: {err}); offline, pass a local directory"
        ) from None
