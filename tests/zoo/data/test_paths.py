import pytest

from zoo.config import UserError
from zoo.data.paths import ENV_VAR, require, resolve_data_dir, write_atomic


def test_explicit_value_wins_over_environment(tmp_path, monkeypatch):
    other = tmp_path / "env"
    other.mkdir()
    monkeypatch.setenv(ENV_VAR, str(other))
    assert resolve_data_dir(str(tmp_path)) == tmp_path


def test_environment_then_none(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert resolve_data_dir(None) == tmp_path
    assert resolve_data_dir("") == tmp_path
    monkeypatch.delenv(ENV_VAR)
    assert resolve_data_dir(None) is None


@pytest.mark.parametrize("via_env", [False, True])
def test_missing_directory_is_named(tmp_path, monkeypatch, via_env):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(ENV_VAR, str(missing))
    with pytest.raises(UserError, match=f"{missing}.*{ENV_VAR if via_env else 'data.data_dir'}"):
        resolve_data_dir(None if via_env else str(missing))


def test_require_names_the_missing_file(tmp_path):
    present = tmp_path / "a.txt"
    present.write_text("x")
    assert require(present, "thing") == present
    with pytest.raises(UserError, match=r"training source not found: .*b\.txt"):
        require(tmp_path / "b.txt", "training source")
    with pytest.raises(UserError):
        require(tmp_path, "a directory is not a file")


def test_write_atomic_replaces_whole_files_and_leaves_no_temporaries(tmp_path):
    target = tmp_path / "sub" / "model.bin"
    assert write_atomic(target, b"first") == target
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]
