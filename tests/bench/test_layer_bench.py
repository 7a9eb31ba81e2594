"""The measurements of `python -m bench.layers` (bench/layers) against formulas and toy cases."""

import json
import math

import pytest
import torch

from bench.layers import __main__ as cli
from bench.layers import measure
from zoo.blocks import MIXERS, LocalAttention, MultiHeadAttention, Recurrent, build_mixer

PARALLEL = [name for name in sorted(MIXERS) if name not in measure.RECURRENT]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_path_length_equals_formula(name: str, causal: bool) -> None:
    got = measure.path_length(name, length=9, dim=2, causal=causal, kernel_size=3)
    assert got == measure.expected_path_length(name, length=9, causal=causal, kernel_size=3)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", ["conv", "dilated_conv", "local_attention"])
def test_path_length_equals_formula_wider_kernel(name: str, causal: bool) -> None:
    got = measure.path_length(name, length=12, dim=2, causal=causal, kernel_size=5)
    assert got == measure.expected_path_length(name, length=12, causal=causal, kernel_size=5)


def test_path_length_formulas_are_the_issue_s() -> None:
    n, k = 20, 5
    expected = {"attention": 1, "rnn": n - 1, "gru": n - 1, "lstm": n - 1}
    for name, value in expected.items():
        assert measure.expected_path_length(name, length=n, causal=True, kernel_size=k) == value
    for name in ("conv", "separable_conv", "local_attention"):
        assert measure.expected_path_length(name, length=n, causal=False, kernel_size=k) == math.ceil(
            (n - 1) / ((k - 1) / 2)
        )
        assert measure.expected_path_length(name, length=n, causal=True, kernel_size=k) == math.ceil(
            (n - 1) / (k - 1)
        )
    # Dilations 1, 5, 25 (causal) reach 4, 24, 124 positions back; 1, 3, 9 ('same') 2, 8, 26.
    assert measure.expected_path_length("dilated_conv", length=n, causal=True, kernel_size=k) == 2
    assert measure.expected_path_length("dilated_conv", length=n, causal=False, kernel_size=k) == 3


def test_reachability_catches_a_causal_layer_that_sees_the_future() -> None:
    x = torch.randn(4, 4, 2, dtype=torch.float64, requires_grad=True)
    seen = measure.dependence(x.roll(-1, dims=1) * 2, x)
    assert seen[0, 1] and not seen[0, 0]
    with pytest.raises(AssertionError, match="future"):
        measure._connected(seen, causal=True)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("causal", [True, False])
def test_relaxed_recurrence_is_exact_after_n_minus_1_sweeps_only(cell: str, causal: bool) -> None:
    torch.manual_seed(0)
    layer = Recurrent(4, cell=cell, causal=causal).double()
    x = torch.randn(2, 7, 4, dtype=torch.float64)
    torch.testing.assert_close(measure.relaxed_recurrence(layer, x, 6), layer(x))
    assert not torch.allclose(measure.relaxed_recurrence(layer, x, 5), layer(x))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_counted_flops_equal_analytic(name: str, causal: bool) -> None:
    for batch, length, dim in ((2, 10, 8), (1, 3, 4)):
        mixer = build_mixer(name, dim, causal=causal, kernel_size=3, num_heads=2 if dim > 4 else 1)
        counted = measure.count_flops(measure.traced(mixer), torch.randn(batch, length, dim))
        assert counted == measure.analytic_flops(
            name, batch=batch, length=length, dim=dim, causal=causal, kernel_size=3
        )


def test_flops_of_torch_gru_kernel_equal_analytic() -> None:
    """On CPU torch runs nn.GRU as per-step matmuls, so its own count is a cross-check."""
    mixer = build_mixer("gru", 8, causal=True)
    assert measure.count_flops(mixer, torch.randn(2, 6, 8)) == measure.analytic_flops(
        "gru", batch=2, length=6, dim=8, causal=True, kernel_size=3
    )


def test_attention_flops_are_quadratic_and_local_linear_in_n() -> None:
    def attention_flops(module: torch.nn.Module, length: int) -> int:
        projections = 8 * length * 8 * 8
        return measure.count_flops(module, torch.randn(1, length, 8)) - projections

    full, local = MultiHeadAttention(8, 2), LocalAttention(8, 2, window=4)
    assert attention_flops(full, 64) == 4 * attention_flops(full, 32) > 0
    assert attention_flops(local, 64) == 2 * attention_flops(local, 32) > 0


def test_sequential_ops_of_toy_functions() -> None:
    def chain(x: torch.Tensor) -> torch.Tensor:
        for _ in range(5):
            x = x + 1
        return x

    def parallel(x: torch.Tensor) -> torch.Tensor:
        return sum(x * i for i in range(5))  # five products side by side, then the adds

    x = torch.randn(3)
    assert measure.sequential_ops(chain, x) == 5
    assert measure.sequential_ops(lambda t: t.view(3, 1).t().exp(), x) == 1
    assert measure.sequential_ops(parallel, x) == 1 + 5  # one product, then 0 + ... + x*4


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_sequential_ops_constant_or_linear_in_n(name: str) -> None:
    mixer = measure.traced(build_mixer(name, 4, causal=True))
    ops = [measure.sequential_ops(mixer, torch.randn(1, n, 4)) for n in (4, 8, 12)]
    if name in measure.RECURRENT:
        assert ops[2] - ops[1] == ops[1] - ops[0] > 0
    else:
        assert ops[0] == ops[1] == ops[2]


def test_live_bytes_counts_allocations_and_releases() -> None:
    with measure._LiveBytes() as tracker:
        a = torch.ones(1000)
        del a
        b = torch.ones(1000)
        view = b[10:]
    assert tracker.peak == 4000
    del b, view


def test_peak_memory_grows_with_length() -> None:
    mixer = build_mixer("conv", 8, causal=True)
    small, large = (measure.peak_memory(mixer, torch.randn(1, n, 8)) for n in (64, 256))
    assert large > 2 * small > 0


def test_fit_exponent_and_crossover() -> None:
    xs = [1, 2, 4, 8, 16, 32]
    assert measure.fit_exponent(xs, [3 * x**1.5 for x in xs]) == pytest.approx(1.5)
    quadratic, linear = [x * x for x in xs], [16 * x for x in xs]
    assert measure.crossover(xs, quadratic, linear) == pytest.approx(16)
    assert measure.crossover(xs, [x / 2 for x in xs], linear) is None
    assert measure.crossover(xs, linear, quadratic) == 1


def test_command_writes_table_plots_and_json(tmp_path, monkeypatch, capsys) -> None:
    tiny = cli.Grid(
        flop_lengths=[4, 8, 16],
        flop_dims=[4, 8, 16],
        sequential_lengths=[4, 8],
        path_lengths=[3, 5],
        time_lengths=[8, 16],
        time_dims=[8],
        repeats=1,
    )
    monkeypatch.setitem(cli.GRIDS, "quick", tiny)
    cli.main(["--out", str(tmp_path)])
    assert "wrote" in capsys.readouterr().out
    results = json.loads((tmp_path / "layers.json").read_text())
    assert all(layer["flops_equal_formula"] for layer in results["summary"]["layers"].values())
    assert results["summary"]["crossover_flops"]["gru"]["8"]["n"] == pytest.approx(8)
    table = (tmp_path / "layers.md").read_text()
    assert all(f"(`{name}`)" in table for name in MIXERS) and "**no**" not in table
    for plot in ("flops", "time_memory", "sequential_path"):
        assert (tmp_path / f"layers_{plot}.png").stat().st_size > 10_000
