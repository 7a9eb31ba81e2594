"""Model soups (Wortsman et al., 2022): one model whose weights are the mean of several runs
fine-tuned from the same pretrained start with different hyperparameters.

Fine-tunings of one pretrained model tend to land in one basin, so their average is itself a good
model, often better than its best ingredient, at the cost of a single model (an ensemble of the
same runs costs one forward pass per run). The greedy soup is the paper's recipe: ingredients
sorted by their held-out score, each added only if the soup with it scores at least as well on
held-out data.

Ingredients must be the same model: the same task schema, the same `model` section of the
recipe (architecture and pretrained start), the same artifacts (vocabulary, labels). Anything
else is refused in one line naming the ingredient and the key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from zoo.config import UserError
from zoo.train.average import CARRIED_KEYS, average_checkpoints
from zoo.train.checkpoint import load_checkpoint, save_atomic


def _identity(state: dict) -> dict:
    """What must agree between ingredients for their mean to be one model."""
    config = yaml.safe_load(state["config"]) if isinstance(state.get("config"), str) else {}
    return {
        "schema": state.get("schema"),
        **{f"model.{key}": value for key, value in (config.get("model") or {}).items()},
        **{f"{key} (recipe)": value for key, value in config.items() if not isinstance(value, dict)},
        "artifacts": state.get("artifacts"),
    }


def check_ingredients(paths: list[Path]) -> dict:
    """The first ingredient's checkpoint, once every other one is the same model (else a UserError
    naming the file and the first key that differs)."""
    if not paths:
        raise UserError("a soup needs at least one checkpoint")
    first = load_checkpoint(paths[0])
    if "model" not in first:
        raise UserError(f"{paths[0]}: no 'model' entry; not a zoo training checkpoint")
    expected = _identity(first)
    for path in paths[1:]:
        found = _identity(load_checkpoint(path))
        for key in sorted(expected.keys() | found.keys()):
            if expected.get(key) != found.get(key):
                shown = "differ" if key == "artifacts" else f"{found.get(key)!r}, not {expected.get(key)!r}"
                raise UserError(
                    f"{path}: {key} {shown} as in {paths[0]}: a soup averages fine-tunings of one model"
                )
    return first


def write_soup(paths: list[Path], output: Path) -> None:
    """Average the evaluated weights of `paths` into a checkpoint at `output` that loads like the
    first ingredient's (its recipe, artifacts and step), naming its ingredients."""
    first = check_ingredients(paths)
    state = {key: first[key] for key in CARRIED_KEYS if key in first}
    state["model"] = average_checkpoints(paths)
    state["souped_from"] = [str(path) for path in paths]
    save_atomic(state, output)


def greedy_soup(
    ranked: list[Path], score: Callable[[Path], float], output: Path
) -> tuple[list[Path], list[dict]]:
    """Wortsman et al.'s greedy soup, written to `output`.

    Args:
        ranked: the ingredients, best held-out score first.
        score: a checkpoint file -> its held-out score (higher is better). Never the reported
            split: the soup is chosen by it.
        output: where the soup goes; a candidate soup is written beside it while it is scored.

    Returns:
        The ingredients kept, and one record per ingredient tried: its path, the held-out score of
        the soup with it, and whether it joined (the score did not fall).
    """
    candidate = output.with_name(output.stem + ".candidate.pt")
    kept: list[Path] = []
    best = float("-inf")
    trials: list[dict] = []
    for path in ranked:
        write_soup([*kept, path], candidate)
        value = score(candidate)
        joined = value >= best
        trials.append({"ingredient": str(path), "soup_score": value, "joined": joined})
        if joined:
            kept.append(path)
            best = value
            candidate.replace(output)
    candidate.unlink(missing_ok=True)
    return kept, trials
