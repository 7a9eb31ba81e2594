"""The shared verbs: train, evaluate, predict, attention, export and average, written once for
every task that fills a `TaskSpec` (zoo.verbs.spec) and registers it (zoo.verbs.registry)."""

from zoo.verbs.options import VerbOptions
from zoo.verbs.spec import Evaluation, Loaded, TaskSpec, Unsupported

__all__ = ["Evaluation", "Loaded", "TaskSpec", "Unsupported", "VerbOptions"]
