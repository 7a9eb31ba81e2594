import pytest
import torch

from zoo.train.average import average_checkpoints, average_state_dicts


def state(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "weight": torch.randn(4, 3, generator=g),
        "half": torch.randn(5, generator=g).half(),
        "steps": torch.tensor(seed),
        "flags": torch.rand(3, generator=g) > 0.5,
    }


def test_average_is_the_elementwise_mean():
    states = [state(s) for s in range(3)]
    avg = average_state_dicts(iter(states))  # a generator is enough
    torch.testing.assert_close(avg["weight"], torch.stack([s["weight"] for s in states]).mean(0))
    torch.testing.assert_close(avg["half"], torch.stack([s["half"].double() for s in states]).mean(0).half())
    assert avg["half"].dtype == torch.float16
    assert avg["steps"] == 2 and torch.equal(avg["flags"], states[-1]["flags"])  # from the last


def test_accumulates_in_float64():
    big = {"x": torch.tensor([60000.0], dtype=torch.float16)}  # the float16 sum of two overflows
    assert average_state_dicts([big, big, big])["x"].item() == 60000.0


def test_mismatched_state_dicts_are_refused():
    with pytest.raises(ValueError, match="keys"):
        average_state_dicts([state(0), {"weight": torch.zeros(4, 3)}])
    other = state(1)
    other["weight"] = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="shape"):
        average_state_dicts([state(0), other])


def test_average_checkpoints_reads_the_model_entry(tmp_path):
    paths = []
    for seed in range(2):
        paths.append(tmp_path / f"step_{seed}.pt")
        torch.save({"model": state(seed), "step": seed}, paths[-1])
    avg = average_checkpoints(paths)
    torch.testing.assert_close(avg["weight"], (state(0)["weight"] + state(1)["weight"]) / 2)
