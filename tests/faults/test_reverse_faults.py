"""The reverse demo's data settings are checked against its model when the config is read: one
line naming the key, instead of a failure inside the model or the generator mid-run."""

from __future__ import annotations

import pytest
from clirun import assert_refused, run


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--data.max_len=64"], "data.max_len"),  # 64 + 1 positions > model.max_len 64
        (["--data.min_len=12"], "data.min_len"),  # more than data.max_len 10
        (["--data.min_len=0"], "data.min_len"),
        (["--data.valid_size=0"], "data.valid_size"),  # evaluation would divide by zero
        (["--data.num_symbols=0"], "data.num_symbols"),
    ],
)
def test_data_the_model_cannot_take_is_a_config_error(tmp_path, extra, named):
    result = run("tasks.reverse.train", f"--train.out_dir={tmp_path / 'run'}", *extra)
    assert_refused(result, named)
    assert not (tmp_path / "run").exists()
