"""The task-agnostic runner: `fit(cfg, task)`."""

from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig
from zoo.train.losses import label_smoothed_cross_entropy
from zoo.train.runner import FitResult, Runner, TrainingDiverged, fit, move_to
from zoo.train.task import StepOutput, Task

__all__ = ["FitResult", "OptimConfig", "RunConfig", "Runner", "ScheduleConfig", "StepOutput",
           "Task", "TrainConfig", "TrainingDiverged", "fit", "label_smoothed_cross_entropy",
           "move_to"]
