"""Tasks by name. A task registers its spec as an entry point of the `zoo.tasks` group
(pyproject.toml), the way pytest finds plugins: the library never imports `tasks/`, and a
package outside this repository can add a task without touching it."""

from __future__ import annotations

from importlib.metadata import entry_points

from zoo.config import UserError
from zoo.verbs.spec import TaskSpec

GROUP = "zoo.tasks"


def _entries() -> dict:
    return {entry.name: entry for entry in entry_points(group=GROUP)}


def task_names() -> list[str]:
    return sorted(_entries())


def get_spec(name: str) -> TaskSpec:
    """The spec registered as `name`, instantiated."""
    entries = _entries()
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none (is the project installed: pip install -e .?)"
        raise UserError(f"unknown task {name!r}; the tasks are: {known}")
    spec = entries[name].load()
    return spec()
