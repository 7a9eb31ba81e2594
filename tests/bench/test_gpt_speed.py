"""bench.gpt_speed's arithmetic: prefill from the one-id call, decode from the full call minus it,
the ratios against Hugging Face and CTranslate2, and the agreement of the engines' ids."""

import pytest

from bench.gpt_speed import Preset, rates


def test_prefill_and_decode_rates_come_from_the_one_id_and_the_full_calls():
    p = Preset(vocab=10, train_batch=1, train_context=4, prompt=8, new=4)
    seconds = {"zoo/1": 0.1, "zoo/4": 0.4, "hf/1": 0.2, "hf/4": 0.8, "ct2_fp32/1": 0.1, "ct2_fp32/4": 0.25}
    outputs = {"zoo": [[1, 2, 3, 4]] * 2, "hf": [[1, 2, 3, 4]] * 2, "ct2_fp32": [[1, 2, 3, 4], [1, 2, 0, 0]]}
    rows = {r["engine"]: r for r in rates(seconds, outputs, 2, p)}

    zoo = rows["zoo"]
    assert zoo["prefill_tokens_per_s"] == pytest.approx(2 * 8 / 0.1)
    assert zoo["decode_tokens_per_s"] == pytest.approx(2 * 3 / 0.3)  # 3 ids after the first, per row
    assert zoo["total_tokens_per_s"] == pytest.approx(2 * 4 / 0.4)
    assert zoo["decode_vs_hf"] == pytest.approx(0.6 / 0.3)
    assert zoo["decode_vs_ct2"] == pytest.approx(0.15 / 0.3)
    assert rows["ct2_fp32"]["decode_vs_ct2"] == pytest.approx(1.0)
    assert rows["ct2_fp32"]["same_ids_as_zoo"] == pytest.approx(6 / 8)
    assert rows["hf"]["same_ids_as_zoo"] == 1.0
