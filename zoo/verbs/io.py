"""Where the verbs read inputs and write outputs: checked before any model is loaded, so a
mistyped path costs a second, not a decoding run."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from zoo.atomic import umask
from zoo.config import UserError
from zoo.data.text import read_lines, stdin_lines


def check_writable(path: str, option: str) -> None:
    """Fail early when the file an option names cannot be written there."""
    if not path:
        return
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        raise UserError(f"--{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UserError(f"--{option} {path}: folder {folder} is not writable")


def check_image_output(path: str, option: str) -> None:
    """Fail early when the picture an option names has no suffix matplotlib writes (it would
    refuse only after the drawing, or add .png to a name without one)."""
    if not path:
        return
    from zoo.plot import image_formats  # matplotlib: only for the verbs that draw

    formats = image_formats()
    suffix = Path(path).suffix[1:].lower()
    if suffix not in formats:
        what = f"{suffix!r} is not an image format" if suffix else "no image format in the name"
        raise UserError(f"--{option} {path}: {what}; end it with one of {', '.join(formats)}")


def check_readable(path: str, option: str) -> None:
    if path and not Path(path).is_file():
        raise UserError(f"--{option}: file not found: {path}")


def input_lines(path: str, *, limit: int = 0) -> list[str]:
    """The lines of `path` ('' = stdin), UTF-8 checked line by line, the first `limit` (0 = all)."""
    check_readable(path, "input")
    lines = list(read_lines(Path(path)) if path else stdin_lines())
    return lines[:limit] if limit else lines


def write_text(path: str, text: str) -> None:
    """`text` to the file `path`, or to stdout when `path` is ''."""
    if path:
        Path(path).write_text(text)
    else:
        sys.stdout.write(text)


def check_output_directory(output: Path, *, force: bool, keep: Iterable[Path] = ()) -> None:
    """Refuse an --output directory whose writing would lose what it must not: an existing file
    (a directory would take its place), one of `keep` (what is being read: the run, its
    checkpoint) or a folder holding one, even with `force`; any other existing one without it."""
    target = output.resolve()
    for path in keep:
        kept = path.resolve()
        if target == kept or target in kept.parents:
            raise UserError(
                f"--output {output} {'is' if target == kept else 'holds'} {path}, an input of this command: "
                "choose a directory outside it (--force never replaces one)"
            )
    if output.exists() and not output.is_dir():
        raise UserError(f"--output {output}: an existing file, not a directory; choose another --output")
    if output.exists() and not force:
        raise UserError(f"{output} exists: choose another --output or pass --force to replace it")
    check_writable(str(output), "output")


def write_directory(
    output: Path, fill: Callable[[Path], None], *, force: bool, keep: Iterable[Path] = ()
) -> None:
    """Fill a new directory and move it into place at `output`: a failure leaves nothing half
    written, and an existing directory is replaced only with `force` (one rule for every writer)
    and never when it is or holds one of `keep` (check_output_directory). The directory and what
    `fill` writes get the modes of a plain mkdir and open (some writers make files private)."""
    check_output_directory(output, force=force, keep=keep)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.absolute().parent))
    try:
        fill(staging)
        _plain_modes(staging)
        if output.is_symlink():  # a link to a directory: the link is replaced, not its target
            output.unlink()
        elif output.exists():
            shutil.rmtree(output)
        staging.rename(output)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _plain_modes(folder: Path) -> None:
    """`folder` and everything in it with the modes mkdir and open give under the umask:
    mkdtemp makes the folder private (0700), safetensors its files (0600)."""
    mask = umask()
    os.chmod(folder, 0o777 & ~mask)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                executable = os.stat(path).st_mode & 0o111
                os.chmod(path, (0o777 if executable else 0o666) & ~mask)
