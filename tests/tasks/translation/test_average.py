import pytest
import torch

from tasks.translation.average import main
from zoo.models import ModelConfig, build_model

CFG = ModelConfig(encoder_layers=1, decoder_layers=1, dim=16, ffn_dim=32, num_heads=2, max_len=16)


def write_run(run_dir, steps: list[int]) -> list[dict]:
    states = []
    for step in steps:
        torch.manual_seed(step)
        model = build_model(CFG, 11, 11, 0)
        states.append(model.state_dict())
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": {"state": {}}, "step": step,
                    "config": f"seed: {step}\n"}, run_dir / "checkpoints" / f"step_{step:08d}.pt")
    return states


def test_cli_averages_the_newest_checkpoints(tmp_path, capsys):
    states = write_run(tmp_path, [100, 200, 300, 400])
    main(["--run", str(tmp_path), "--last", "3"])
    out = torch.load(tmp_path / "averaged.pt", map_location="cpu", weights_only=True)
    assert out["config"] == "seed: 400\n" and out["step"] == 400 and "optimizer" not in out
    assert out["averaged_from"] == ["step_00000200.pt", "step_00000300.pt", "step_00000400.pt"]
    for key, value in out["model"].items():
        torch.testing.assert_close(value, sum(s[key] for s in states[1:]) / 3)
    build_model(CFG, 11, 11, 0).load_state_dict(out["model"])  # loads back into the model
    assert "averaged 3 checkpoints" in capsys.readouterr().out


def test_too_few_checkpoints_is_a_user_error(tmp_path, capsys):
    write_run(tmp_path, [1, 2])
    with pytest.raises(SystemExit) as exit_info:
        main(["--run", str(tmp_path), "--last", "5", "--out", str(tmp_path / "avg.pt")])
    assert exit_info.value.code == 2 and "fewer than --last 5" in capsys.readouterr().err
