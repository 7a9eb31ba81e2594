"""Hugging Face hub snapshots: the files of a model repository, downloaded once into the Hugging
Face cache (needs internet the first time; later runs read the cache).

Beside the converters rather than in zoo.data.fetch: what comes down is a checkpoint in a foreign
layout, named by the hub's own scheme, and only a converter (zoo.convert.hf_bert) reads it;
zoo.data.fetch is plain resumable URL downloads of data sets and knows no hub.
"""

from __future__ import annotations

import functools
import os
import re
import socket
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from zoo.config import UserError

# A hub repository name: bert-base-uncased, google/bert_uncased_L-2_H-128_A-2.
HUB_NAME = re.compile(r"^[\w.-]+(/[\w.-]+)?$")

# Leading components that make a name a local path, never a hub repository: the project's own
# run folder, and the relative-path spellings.
LOCAL_PREFIXES = ("./", "../", "runs/")


def looks_local(source: str) -> bool:
    """Whether `source` reads as a local path rather than a hub name: it starts with /, ~, ./,
    ../ or runs/, or it holds a path separator and its first component exists here."""
    if source.startswith(("/", "~", *LOCAL_PREFIXES)) or (os.sep != "/" and os.sep in source):
        return True
    first, slash, _ = source.partition("/")
    return bool(slash) and Path(first).exists()


def is_hub_name(source: str) -> bool:
    """Whether `source` is to be looked for on the hub: spelled as a repository name, and
    neither an existing local path nor one that looks local (a missing run is no download)."""
    return HUB_NAME.match(source) is not None and not looks_local(source) and not Path(source).exists()


def hub_offline() -> bool:
    """Whether downloads cannot work: HF_HUB_OFFLINE is set, or the hub's host does not answer
    within a second. Checked first, so that an offline run fails at once instead of after the
    hub client's retries (about 50 s)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        return True
    return not _reachable(urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "")


@functools.cache
def _reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=1.0).close()
        return True
    except OSError:  # no DNS, no route, refused, timed out
        return False


def cached_file(repo_id: str, names: Sequence[str]) -> Path | None:
    """The first of `names` that the Hugging Face cache holds for `repo_id` (no network)."""
    from huggingface_hub import try_to_load_from_cache

    for name in names:
        found = try_to_load_from_cache(repo_id, name)
        if isinstance(found, str):
            return Path(found)
    return None


def snapshot(repo_id: str, files: Sequence[str]) -> Path:
    """The local folder holding the hub snapshot of `repo_id`, restricted to `files` (names or
    glob patterns; those the repository lacks are skipped).

    Raises:
        UserError: offline, unknown name or any hub error, in one line.
    """
    from huggingface_hub import snapshot_download

    offline = hub_offline()
    local = {"local_files_only": True} if offline else {}  # offline: what the cache holds, at once
    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(files), **local))
    except Exception as err:  # offline, unknown name, hub errors: one message
        why = "offline and not in the cache" if offline else f"{type(err).__name__}: {err}"
        raise UserError(
            f"cannot download {repo_id!r} from the Hugging Face hub ({why}); offline, pass a local directory"
        ) from None
