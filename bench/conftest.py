"""pytest-benchmark peer benches: zoo and each peer it is measured against in one group.

    python -m pytest bench --benchmark-only [--bench-threads 1] [--bench-preset FAMILY=NAME ...]
        [--bench-precision fp32 --bench-precision bf16] [--bench-run translation=RUN]
        [--benchmark-min-rounds 5]
        [--benchmark-save NAME | --benchmark-json FILE] [--benchmark-compare]

The contenders are the ones the shims (`python -m bench.translation_speed`, ...) build, each
model pair built once per module. `--bench-run translation=runs/NAME` adds the benches on a
trained run (its weights, its real test set, real early stopping); without it they skip. Every
measured call goes through the `measure` fixture: group
"<family> <what> <precision> t=<threads>", extra_info naming the engine and the units (tokens,
images) one call processes, `pedantic` with --benchmark-min-rounds rounds after one warmup round.
`python -m bench.benchmark_report FILE.json` turns the JSON into ratio tables.

pyproject's addopts start pytest-xdist workers, under which pytest-benchmark turns itself off.
This conftest is read only when bench/ is named on the command line (plain `pytest` collects
tests/ alone), and there it runs everything in one process unless --benchmark-disable asks for
no timing at all (a smoke run may keep its workers).
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from importlib import metadata

import pytest
import torch

# The smallest preset each shim offers: `pytest bench --benchmark-only` in a few minutes on 2 cores.
DEFAULT_PRESETS = {
    "translation": "small",
    "gpt": "micro",
    "bert": "tiny",
    "bert_finetune": "tiny",
    "vit": "small",
}
PRECISIONS = ("fp32", "bf16")
TRAINED_FAMILIES = ("translation",)
PEER_PACKAGES = ("torch", "transformers", "ctranslate2", "timm")


def family_value(what: str, families: tuple[str, ...]) -> Callable[[str], tuple[str, str]]:
    """The parser of a FAMILY=WHAT option."""

    def parse(value: str) -> tuple[str, str]:
        family, sep, name = value.partition("=")
        if not sep or family not in families:
            raise argparse.ArgumentTypeError(
                f"{value!r}: expected FAMILY={what} with FAMILY one of {', '.join(families)}"
            )
        return family, name

    return parse


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bench", "zoo's peer benchmarks (bench/)")
    group.addoption("--bench-threads", type=int, default=1, help="torch CPU threads (and CTranslate2's)")
    group.addoption(
        "--bench-preset",
        type=family_value("PRESET", tuple(DEFAULT_PRESETS)),
        action="append",
        default=[],
        metavar="FAMILY=PRESET",
        help=f"a shim's preset for one family (defaults: {DEFAULT_PRESETS}); repeatable",
    )
    group.addoption(
        "--bench-run",
        type=family_value("RUN", TRAINED_FAMILIES),
        action="append",
        default=[],
        metavar="FAMILY=RUN",
        help="a trained run the family's benches decode with (translation: beam 4 on its test set); "
        "without it those benches skip",
    )
    group.addoption(
        "--bench-precision",
        choices=PRECISIONS,
        action="append",
        default=[],
        help="precisions of the training steps and of attention (default fp32; bf16: autocast for the "
        "steps, bf16 tensors for attention, slow on CPUs without bf16 units); repeatable",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not config.getoption("benchmark_disable"):
        # xdist reads these in its own pytest_cmdline_main: all three, whichever of us runs first.
        config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "precision" in metafunc.fixturenames:
        metafunc.parametrize("precision", metafunc.config.getoption("bench_precision") or ["fp32"])


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    """The library versions beside the machine: `--benchmark-compare` warns where they differ."""
    for package in PEER_PACKAGES:
        try:
            machine_info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            machine_info[package] = None


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    output_json["bench"] = {
        "command": "python -m pytest " + shlex.join(config.invocation_params.args),
        "threads": config.getoption("bench_threads"),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


@pytest.fixture(scope="session", autouse=True)
def bench_threads(pytestconfig: pytest.Config):
    """--bench-threads torch threads for the whole session."""
    threads = torch.get_num_threads()
    torch.set_num_threads(pytestconfig.getoption("bench_threads"))
    yield pytestconfig.getoption("bench_threads")
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def preset_of(pytestconfig: pytest.Config) -> Callable[[str, dict], str]:
    """The preset a family runs at: --bench-preset's, else DEFAULT_PRESETS'; checked against the
    shim's own table of presets."""
    chosen = {**DEFAULT_PRESETS, **dict(pytestconfig.getoption("bench_preset"))}

    def preset(family: str, presets: dict) -> str:
        name = chosen[family]
        if name not in presets:
            pytest.exit(
                f"--bench-preset {family}={name}: unknown preset; known: {', '.join(presets)}",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )
        return name

    return preset


@pytest.fixture(scope="session")
def run_of(pytestconfig: pytest.Config) -> Callable[[str], str]:
    """The trained run --bench-run names for a family; the asking test skips where none does."""
    runs = dict(pytestconfig.getoption("bench_run"))

    def run(family: str) -> str:
        if family not in runs:
            pytest.skip(f"no trained run: pass --bench-run {family}=runs/NAME")
        return runs[family]

    return run


@pytest.fixture
def measure(benchmark, bench_threads: int, pytestconfig: pytest.Config):
    """`measure(fn, what, engine, per_call, ...)` times `fn` with pytest-benchmark in the group
    "<what> <precision> t=<threads>" (`what` starts with the family) and returns its last result.
    `per_call` None: the units are what `fn` returns (tokens an engine generated on real text,
    where each engine stops on its own), checked equal in every round."""
    rounds = pytestconfig.getoption("benchmark_min_rounds")

    def run(
        fn: Callable[[], object],
        what: str,
        engine: str,
        per_call: int | None,
        *,
        unit: str = "tokens",
        precision: str = "fp32",
        preset: str = "",
    ) -> object:
        benchmark.group = f"{what} {precision} t={bench_threads}"
        benchmark.extra_info.update(
            engine=engine, per_call=per_call, unit=unit, precision=precision, preset=preset
        )
        if per_call is not None:
            return benchmark.pedantic(fn, rounds=rounds, warmup_rounds=1)
        units: list[int] = []

        def counted() -> int:
            units.append(fn())
            return units[-1]

        result = benchmark.pedantic(counted, rounds=rounds, warmup_rounds=1)
        assert len(set(units)) == 1, f"{engine} gave {sorted(set(units))} units in different rounds"
        benchmark.extra_info["per_call"] = result
        return result

    return run
