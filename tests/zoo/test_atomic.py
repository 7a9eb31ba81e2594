"""Atomic writes: the file appears whole under its name with the usual mode, or not at all."""

import os
import stat

import pytest

from zoo.atomic import atomic_open, clean_partial_writes


def test_a_finished_write_has_the_mode_open_would_give(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_open(tmp_path / "a.txt") as f:
            f.write(b"whole")
        (tmp_path / "plain.txt").write_bytes(b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_bytes() == b"whole"
    assert (
        stat.S_IMODE((tmp_path / "a.txt").stat().st_mode)
        == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
        == 0o644
    )


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "a.txt") as f:
        f.write(b"half")
        raise RuntimeError("disk gone")
    assert (tmp_path / "a.txt").read_bytes() == b"old" and clean_partial_writes(tmp_path) == []
