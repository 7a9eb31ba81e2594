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
from dataclasses import dataclass
from pathlib import Path

import yaml
from torch import Tensor

from zoo.config import UserError
from zoo.train.average import CARRIED_KEYS, average_state_dicts, evaluated_weights
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


@dataclass
class Ingredient:
    """One fine-tuning, loaded once: its evaluated weights and what a soup of it carries."""

    path: Path
    weights: dict[str, Tensor]
    carried: dict  # CARRIED_KEYS of its checkpoint


def load_ingredients(paths: list[Path]) -> list[Ingredient]:
    """Each checkpoint read once, after the first, checked to be the same model as the first
    (else a UserError naming the file and the first key that differs)."""
    if not paths:
        raise UserError("a soup needs at least one checkpoint")
    ingredients, expected = [], None
    for path in paths:
        state = load_checkpoint(path)
        found = _identity(state)
        expected = found if expected is None else expected
        for key in sorted(expected.keys() | found.keys()):
            if expected.get(key) != found.get(key):
                shown = "differ" if key == "artifacts" else f"{found.get(key)!r}, not {expected.get(key)!r}"
                raise UserError(
                    f"{path}: {key} {shown} as in {paths[0]}: a soup averages fine-tunings of one model"
                )
        carried = {key: state[key] for key in CARRIED_KEYS if key in state}
        ingredients.append(Ingredient(path, evaluated_weights(state, path), carried))
    return ingredients


def save_soup(ingredients: list[Ingredient], output: Path) -> None:
    """The mean of the ingredients' weights at `output`, a checkpoint that loads like the first
    ingredient's (its recipe, artifacts and step) and names its ingredients."""
    state = dict(ingredients[0].carried)
    state["model"] = average_state_dicts(i.weights for i in ingredients)
    state["souped_from"] = [str(i.path) for i in ingredients]
    save_atomic(state, output)


def write_soup(paths: list[Path], output: Path) -> None:
    """The soup of the checkpoints `paths` at `output`."""
    save_soup(load_ingredients(paths), output)


def greedy_soup(
    ranked: list[Path], score: Callable[[Path], float], output: Path
) -> tuple[list[Path], list[dict]]:
    """Wortsman et al.'s greedy soup, written to `output`. Each checkpoint is read once.

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
    kept: list[Ingredient] = []
    best = float("-inf")
    trials: list[dict] = []
    for ingredient in load_ingredients(ranked):
        save_soup([*kept, ingredient], candidate)
        value = score(candidate)
        joined = value >= best
        trials.append({"ingredient": str(ingredient.path), "soup_score": value, "joined": joined})
        if joined:
            kept.append(ingredient)
            best = value
            candidate.replace(output)
    candidate.unlink(missing_ok=True)
    return [i.path for i in kept], trials
