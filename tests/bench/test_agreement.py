"""bench.agreement: label agreement and probability gaps against a hand count; bad lines named."""

from __future__ import annotations

import pytest

from bench import agreement


def test_agreement_counts_same_labels_and_gaps_of_the_reference_labels_probability(tmp_path):
    reference, other = tmp_path / "fp32.txt", tmp_path / "int8.txt"
    reference.write_text("1\t0.9000\n0\t0.8000\n1\t0.6000\n")
    other.write_text("1\t0.8500\n0\t0.8000\n0\t0.7000\n")  # the last flips: P(1) = 0.3 there
    result = agreement.main([str(reference), str(other)])
    assert result["items"] == 3 and result["same_label"] == pytest.approx(2 / 3)
    assert result["mean_abs_probability_gap"] == pytest.approx((0.05 + 0.0 + 0.3) / 3)


def test_a_malformed_line_is_refused_naming_file_and_line(tmp_path, capsys):
    good, bad = tmp_path / "a.txt", tmp_path / "b.txt"
    good.write_text("1\t0.9\n1\t0.9\n")
    bad.write_text("1\t0.9\npositive\n")
    with pytest.raises(SystemExit) as exit_info:
        agreement.main([str(good), str(bad)])
    assert exit_info.value.code == 2 and f"{bad}:2" in capsys.readouterr().err
