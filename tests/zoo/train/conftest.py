import pytest

from tasks.reverse.config import ReverseConfig
from zoo.train import OptimConfig, ScheduleConfig, TrainConfig


@pytest.fixture
def tiny_cfg(tmp_path) -> ReverseConfig:
    """A reverse-task config that trains in a second: SGD so updates are linear in gradients."""
    cfg = ReverseConfig()
    cfg.model.dim, cfg.model.ffn_dim, cfg.model.num_heads = 32, 64, 4
    cfg.model.num_layers = cfg.model.decoder_layers = 1
    cfg.data.batch_size, cfg.data.batches_per_epoch, cfg.data.valid_size = 16, 5, 32
    cfg.train = TrainConfig(out_dir=str(tmp_path / "run"), max_steps=4, log_every=1, progress=False,
                            tensorboard=False, threads=1)
    cfg.optim = OptimConfig(name="sgd", lr=0.5, momentum=0.0)
    cfg.schedule = ScheduleConfig(name="constant", warmup_steps=0)
    return cfg
