"""bench.ct2_process for an Encoder (bench.int8_speed bert): the child's hidden and pooled states
are the engine's in this process, a call for timing leaves them there, errors come back as errors."""

import numpy as np
import pytest

from tests.zoo.convert.test_ctranslate2_bert import CONFIGS, ROWS, TYPES, loaded

ctranslate2 = pytest.importorskip("ctranslate2", reason="needs ctranslate2 (pip install ctranslate2)")
pytest.importorskip("transformers", reason="CTranslate2's converter reads the directory with transformers")

from bench.ct2_process import Remote  # noqa: E402
from zoo.convert.ctranslate2_bert import write_ctranslate2_bert  # noqa: E402


def test_the_child_encodes_as_this_process(tmp_path):
    write_ctranslate2_bert(loaded(CONFIGS["2 layers 4 heads"]), tmp_path / "ct2")
    here = ctranslate2.Encoder(str(tmp_path / "ct2"), intra_threads=1).forward_batch(
        ROWS, token_type_ids=TYPES
    )
    there = Remote("Encoder", str(tmp_path / "ct2"), intra_threads=1)
    try:
        ours = there.forward_batch(ROWS, token_type_ids=TYPES)
        np.testing.assert_array_equal(ours.last_hidden_state, np.array(here.last_hidden_state))
        np.testing.assert_array_equal(ours.pooler_output, np.array(here.pooler_output))
        there.forward_batch_untransferred(ROWS, token_type_ids=TYPES)  # runs there, returns nothing
        with pytest.raises(RuntimeError, match="CTranslate2 in its process: TypeError"):
            there.forward_batch_untransferred(ROWS, no_such_option=1)
    finally:
        there.close()
