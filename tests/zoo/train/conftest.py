import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the toy task module beside these tests

from toy import ToyConfig, tiny_config  # noqa: E402


@pytest.fixture
def tiny_cfg(tmp_path) -> ToyConfig:
    """A toy-task config that trains in well under a second."""
    return tiny_config(str(tmp_path / "run"))
