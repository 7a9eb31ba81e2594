"""bench.ct2_process: CTranslate2 in a child process answers as in this one, and reports its
errors as errors here."""

import pytest

from tests.zoo.convert.test_ctranslate2_gpt import CONFIGS, PROMPTS, exported, strings

pytest.importorskip("ctranslate2", reason="needs ctranslate2 (pip install ctranslate2)")

from bench.ct2_process import Remote  # noqa: E402


def test_the_child_generates_as_this_process(tmp_path):
    _, here = exported(CONFIGS["2 layers exact gelu no bias"], tmp_path)
    there = Remote("Generator", str(tmp_path / "ct2"), intra_threads=1)
    try:
        options = dict(max_length=6, sampling_topk=1, return_scores=True, include_prompt_in_result=False)
        ours = there.generate_batch([strings(p) for p in PROMPTS], **options)
        theirs = here.generate_batch([strings(p) for p in PROMPTS], **options)
        assert [r.sequences_ids for r in ours] == [r.sequences_ids for r in theirs]
        assert [r.sequences for r in ours] == [r.sequences for r in theirs]
        assert [r.scores for r in ours] == [r.scores for r in theirs]
        with pytest.raises(RuntimeError, match="CTranslate2 in its process: TypeError"):
            there.generate_batch([["t"]], no_such_option=1)
    finally:
        there.close()


def test_a_missing_model_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="CTranslate2 in its process"):
        Remote("Generator", str(tmp_path / "nothing"))
