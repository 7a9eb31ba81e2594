"""Resumable, verified downloads.

A download goes to DEST.part and is renamed to DEST only when complete and verified, so DEST
never holds a partial file. Running again after an interruption resumes the .part file with an
HTTP Range request (or starts over where the server does not support ranges).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import IO
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from tqdm import tqdm

from zoo.config import UserError

_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def fetch(
    url: str,
    dest: str | Path,
    *,
    size: int | None = None,
    sha256: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Download `url` to `dest` unless it is already there; return `dest`.

    Args:
        url: http(s):// or file:// address.
        dest: the final file; its folder is created.
        size: expected size in bytes, if known.
        sha256: expected SHA-256 hex digest, if known.
        progress: show a progress bar.
        timeout: seconds to wait for the server.

    Raises:
        UserError: the server fails, the transfer stops early (run again to resume), or the file
            does not match `size` / `sha256` (then the partial file is deleted).
    """
    dest = Path(dest)
    if dest.is_file():
        _verify(dest, dest, size, sha256)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        with urlopen(Request(url, headers=headers), timeout=timeout) as response:
            if offset and getattr(response, "status", None) != 206:
                offset = 0  # the server sent the whole file: start over
            length = response.headers.get("Content-Length")
            expected = offset + int(length) if length is not None else size
            with open(part, "ab" if offset else "wb") as out:
                _copy(response, out, offset, expected, dest.name if progress else None)
    except HTTPError as err:
        if err.code != 416:  # 416: nothing left to send, the .part file is complete
            raise UserError(f"download failed: {url}: HTTP {err.code} {err.reason}") from None
        expected = None
    except (URLError, OSError) as err:
        raise UserError(
            f"download failed: {url}: {getattr(err, 'reason', err)} (run again to resume from {part})"
        ) from None
    got = part.stat().st_size
    if expected is not None and got < expected:
        raise UserError(
            f"download of {url} stopped at {got} of {expected} bytes: run again to resume from {part}"
        )
    _verify(part, dest, size, sha256)
    os.replace(part, dest)
    return dest


def _copy(source: IO[bytes], out: IO[bytes], offset: int, total: int | None, label: str | None) -> None:
    with tqdm(
        total=total, initial=offset, unit="B", unit_scale=True, desc=label, disable=label is None
    ) as bar:
        while block := source.read(_CHUNK):
            out.write(block)
            bar.update(len(block))


def _verify(path: Path, dest: Path, size: int | None, sha256: str | None) -> None:
    problem = None
    if size is not None and path.stat().st_size != size:
        problem = f"{path.stat().st_size} bytes, expected {size}"
    elif sha256 is not None and (digest := sha256_of(path)) != sha256.lower():
        problem = f"SHA-256 {digest}, expected {sha256}"
    if problem:
        if path != dest:
            path.unlink()
        advice = "delete it to download again" if path == dest else "the download was deleted; run again"
        raise UserError(f"{dest}: {problem} ({advice})")
