"""zoo.train.soup: the soup is the mean of its ingredients, the greedy recipe keeps what does not
lower the held-out score, and fine-tunings of different models are refused by name."""

from pathlib import Path

import pytest
import torch
import yaml

from zoo.config import UserError
from zoo.train import soup
from zoo.train.checkpoint import load_checkpoint
from zoo.train.soup import greedy_soup, write_soup


def ingredient(folder: Path, name: str, weight: float, *, init: str = "runs/pretrained", lr: float = 3e-4):
    """A fine-tuning checkpoint whose one weight is `weight`; the recipe's optimizer may differ."""
    config = {"head": "classify", "model": {"dim": 2, "init": init}, "optim": {"lr": lr}}
    path = folder / f"{name}.pt"
    torch.save(
        {
            "model": {"w": torch.full((2,), weight), "step_count": torch.tensor(7)},
            "config": yaml.safe_dump(config),
            "schema": "FinetuneConfig",
            "artifacts": {"labels.json": b'["0", "1"]'},
            "step": 100,
            "optimizer": {"not": "carried"},
        },
        path,
    )
    return path


def weight(path: Path) -> float:
    return torch.load(path, weights_only=True)["model"]["w"][0].item()


def test_a_soup_is_the_mean_and_loads_like_its_first_ingredient(tmp_path):
    paths = [ingredient(tmp_path, "a", 1.0, lr=1e-4)]
    paths += [ingredient(tmp_path, "b", 4.0), ingredient(tmp_path, "c", 7.0)]
    write_soup(paths, tmp_path / "soup.pt")
    soup = torch.load(tmp_path / "soup.pt", weights_only=True)
    torch.testing.assert_close(soup["model"]["w"], torch.full((2,), 4.0))
    assert soup["model"]["step_count"] == 7  # an integer buffer is taken, not averaged
    assert soup["souped_from"] == [str(p) for p in paths]
    assert yaml.safe_load(soup["config"])["optim"]["lr"] == 1e-4  # the first ingredient's recipe
    assert soup["artifacts"] == {"labels.json": b'["0", "1"]'}
    assert "optimizer" not in soup  # belongs to one point of one run


def test_fine_tunings_of_another_model_are_refused_naming_file_and_key(tmp_path):
    a = ingredient(tmp_path, "a", 1.0)
    b = ingredient(tmp_path, "b", 2.0, init="runs/other-pretraining")
    refusal = r"b\.pt: model\.init 'runs/other-pretraining', not 'runs/pretrained'"
    with pytest.raises(UserError, match=refusal):
        write_soup([a, b], tmp_path / "soup.pt")
    assert not (tmp_path / "soup.pt").exists()


def test_the_greedy_soup_keeps_what_does_not_lower_the_held_out_score(tmp_path, monkeypatch):
    # Held-out score: closeness of the soup's weight to 2. Ranked a, b, c, d:
    # a alone 1 -> -1; a+b mean 2 -> 0, joins; a+b+c mean -1 -> -3, left out;
    # a+b+d mean 2 -> 0, a tie, joins (the recipe's "at least as well").
    ranked = [
        ingredient(tmp_path, "a", 1.0),
        ingredient(tmp_path, "b", 3.0),
        ingredient(tmp_path, "c", -7.0),
        ingredient(tmp_path, "d", 2.0),
    ]
    scored = []

    def score(path: Path) -> float:
        scored.append(weight(path))
        return -abs(weight(path) - 2.0)

    reads = []
    monkeypatch.setattr(soup, "load_checkpoint", lambda path: reads.append(path) or load_checkpoint(path))
    kept, trials = greedy_soup(ranked, score, tmp_path / "greedy.pt")
    assert reads == ranked  # each ingredient read once, not once per trial
    assert kept == [ranked[0], ranked[1], ranked[3]]
    assert scored == [1.0, 2.0, -1.0, 2.0]
    assert [t["soup_score"] for t in trials] == [-1.0, 0.0, -3.0, 0.0]
    assert [t["joined"] for t in trials] == [True, True, False, True]
    assert weight(tmp_path / "greedy.pt") == 2.0
    assert torch.load(tmp_path / "greedy.pt", weights_only=True)["souped_from"] == [str(p) for p in kept]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt", "b.pt", "c.pt", "d.pt", "greedy.pt"]
