"""The verbs' own pieces: old option names, the split's one name, and the all-or-nothing
directory writer every export goes through."""

from pathlib import Path

import pytest

from zoo.config import ConfigError, UserError, load_config
from zoo.verbs.commands import check_close, renamed
from zoo.verbs.io import write_directory
from zoo.verbs.options import VerbOptions


def test_old_option_names_are_renamed_with_a_note_and_their_values_kept(capsys):
    argv = ["RUN", "--out=/tmp/a-b/c-d.txt", "--eval-limit", "5", "--beam-size=2"]
    assert renamed(argv) == ["RUN", "--output=/tmp/a-b/c-d.txt", "--limit", "5", "--beam-size=2"]
    err = capsys.readouterr().err
    assert "--out is now --output" in err and "--eval_limit is now --limit" in err


@pytest.mark.parametrize("given, split", [("dev", "valid"), ("validation", "valid"), ("test", "test")])
def test_the_validation_split_has_one_name(given, split):
    assert load_config(VerbOptions, None, [f"split={given}"]).split == split


def test_an_unknown_split_is_refused_by_name():
    with pytest.raises(ConfigError, match="split"):
        load_config(VerbOptions, None, ["split=heldout"])


def test_a_directory_is_written_whole_or_not_at_all(tmp_path: Path):
    output = tmp_path / "out"

    def fails(staging: Path) -> None:
        (staging / "half.bin").write_bytes(b"x")
        raise RuntimeError("export failed")

    with pytest.raises(RuntimeError):
        write_directory(output, fails, force=False)
    assert list(tmp_path.iterdir()) == []  # no output, no staging left behind

    write_directory(output, lambda staging: (staging / "model.bin").write_bytes(b"1"), force=False)
    with pytest.raises(UserError, match="--force"):
        write_directory(output, lambda staging: None, force=False)
    write_directory(output, lambda staging: (staging / "new.bin").write_bytes(b"2"), force=True)
    assert [p.name for p in output.iterdir()] == ["new.bin"]


def test_only_checkpoints_close_together_are_averaged_unless_forced(tmp_path: Path):
    def steps(*numbers: int) -> list[Path]:
        return [tmp_path / f"step_{n:08d}.pt" for n in numbers]

    check_close(steps(900, 950, 1000), force=False)  # the last stretch of a run
    check_close(steps(600), force=False)
    with pytest.raises(UserError, match="spans steps 200-600"):  # the demo's three saves
        check_close(steps(200, 400, 600), force=False)
    check_close(steps(200, 400, 600), force=True)
