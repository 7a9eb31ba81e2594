"""How large a signal positions add to the token embeddings, checkpoint by checkpoint (Table 3 row E).

    python -m bench.studies.position_signal RUN_DIR [RUN_DIR ...] [--first 30]

For every step checkpoint of a translation run: the root mean square of the source token
embeddings as the model adds them (times sqrt(d_model), over the vocabulary but padding), and of
the encoder's position encodings over the first `--first` positions: the learned table's rows,
or the sinusoids times `model.position_scale` from the run's config.yaml (they are not saved,
being fixed). The question: does a model that learns its positions keep them as large as the
sinusoids it would otherwise be handed?
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

import yaml

from zoo.blocks.positions import sinusoidal_table
from zoo.cli import main_guard
from zoo.train.checkpoint import load_checkpoint, step_checkpoints


def rms(x) -> float:
    return x.float().pow(2).mean().sqrt().item()


def signal(run_dir: Path, first: int) -> list[dict]:
    """One record per step checkpoint: step, token_rms, position_rms."""
    model_cfg = yaml.safe_load((run_dir / "config.yaml").read_text())["model"]
    dim = model_cfg["dim"]
    records = []
    for path in step_checkpoints(run_dir / "checkpoints"):
        state = load_checkpoint(path)
        weights = state["model"]
        tokens = weights["src_embed.tokens.weight"][1:] * math.sqrt(dim)  # row 0: padding
        learned = weights.get("src_embed.positions.weight")
        if learned is None:
            positions = sinusoidal_table(first, dim) * model_cfg.get("position_scale", 1.0)
        else:
            positions = learned[:first]
        records.append({"step": state["step"], "token_rms": rms(tokens), "position_rms": rms(positions)})
    return records


def markdown(run_dir: Path, records: list[dict], first: int) -> str:
    lines = [
        f"## {run_dir}",
        "",
        f"| step | token embeddings (x sqrt(d)) RMS | positions 0-{first - 1} RMS | ratio |",
        "|---|---|---|---|",
    ]
    for r in records:
        ratio = r["position_rms"] / r["token_rms"]
        lines.append(f"| {r['step']} | {r['token_rms']:.3f} | {r['position_rms']:.3f} | {ratio:.3f} |")
    return "\n".join(lines)


@main_guard
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument(
        "--first", type=int, default=30, help="positions measured (Multi30k sentences: ~30 pieces)"
    )
    args = parser.parse_args()
    print("# Positional signal against token embeddings, per checkpoint (Table 3 row E)\n")
    print(f"`{shlex.join(['python', '-m', 'bench.studies.position_signal', *sys.argv[1:]])}`\n")
    for run_dir in args.runs:
        print(markdown(run_dir, signal(run_dir, args.first), args.first) + "\n")


if __name__ == "__main__":
    main()
