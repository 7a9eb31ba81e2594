"""pytest-benchmark micro-benchmarks: forward and backward of every mixer in zoo.blocks.MIXERS.

    python -m pytest bench/test_layers_speed.py --benchmark-enable --benchmark-group-by=group

Kept out of tests/ (which never times anything); with the peer benches, `python -m pytest bench
--benchmark-only` (bench/conftest.py). Causal layers, batch 4, d = 64,
one CPU thread (several threads on a shared CPU spin-wait on each other and time the sharing).
"""

import pytest
import torch

from zoo.blocks import MIXERS, build_mixer

BATCH, DIM = 4, 64
LENGTHS = [64, 512]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _mixer_and_input(name: str, length: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return build_mixer(name, DIM, causal=True), torch.randn(BATCH, length, DIM)


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_forward(benchmark, name: str, length: int) -> None:
    mixer, x = _mixer_and_input(name, length)
    benchmark.group = f"forward n={length}"
    with torch.no_grad():
        y = benchmark(mixer, x)
    assert y.shape == x.shape


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_backward(benchmark, name: str, length: int) -> None:
    """The backward pass alone: one forward graph, differentiated again each round."""
    mixer, x = _mixer_and_input(name, length)
    x.requires_grad_()
    y = mixer(x)
    grad_out = torch.randn_like(y)
    inputs = [x, *mixer.parameters()]
    benchmark.group = f"backward n={length}"
    grads = benchmark(torch.autograd.grad, y, inputs, grad_out, retain_graph=True)
    assert grads[0].shape == x.shape
