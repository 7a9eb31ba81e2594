"""The task-agnostic runner: `fit(cfg, task)`."""

from zoo.blocks.cross_entropy import label_smoothed_cross_entropy
from zoo.train.checkpoint import Trained, load_trained
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig
from zoo.train.evaluation import evaluation
from zoo.train.interrupt import Interrupted
from zoo.train.runner import FitResult, Runner, TrainingDiverged, fit, move_to
from zoo.train.task import RunContext, Task, Term

__all__ = [
    "FitResult",
    "Interrupted",
    "OptimConfig",
    "RunConfig",
    "RunContext",
    "Runner",
    "ScheduleConfig",
    "Task",
    "Term",
    "TrainConfig",
    "Trained",
    "TrainingDiverged",
    "evaluation",
    "fit",
    "label_smoothed_cross_entropy",
    "load_trained",
    "move_to",
]
