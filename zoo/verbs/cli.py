"""python -m zoo VERB TASK [RUN] [--option=value ...]: every task, one verb set, one option set.

    python -m zoo train translation --config configs/translation/multi30k.yaml
    python -m zoo evaluate translation runs/translation-demo --split test --json
    echo "A man is riding a bike." | python -m zoo predict translation runs/translation-demo
    python -m zoo attention vit runs/vit-digits --output rollout.png
    python -m zoo export bert runs/bert-default --format hf --output bert-hf
    python -m zoo average translation runs/translation-demo --last 3

A task's own name for predict works too (translate, parse, classify, fill-mask), and every
`python -m tasks.<task>.<verb>` command is a shim over the same code. `zoo` (the console script)
is the same program.
"""

from __future__ import annotations

import sys

from zoo.cli import main_guard
from zoo.config import UserError
from zoo.cpu_memory import fewer_page_faults
from zoo.verbs import commands
from zoo.verbs.registry import get_spec, task_names
from zoo.verbs.spec import TaskSpec

VERBS = {
    "train": commands.train,
    "evaluate": commands.evaluate,
    "predict": commands.predict,
    "attention": commands.attention,
    "export": commands.export,
    "average": commands.average,
}


@main_guard
def run_verb(spec: TaskSpec, verb: str, argv: list[str] | None = None):
    """Run `verb` (or the task's alias of predict) for `spec`: what every entry point calls."""
    fewer_page_faults()  # before the run's first large tensor (zoo.cpu_memory)
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "predict" if spec.predict_alias and verb == spec.predict_alias else verb
    if name not in VERBS:
        aliases = f", {spec.predict_alias}" if spec.predict_alias else ""
        raise UserError(f"unknown verb {verb!r}; the verbs are: {', '.join(VERBS)}{aliases}")
    return VERBS[name](spec, argv)


def usage() -> str:
    lines = [__doc__.strip(), "", "verbs: " + ", ".join(VERBS), "tasks:"]
    for name in task_names():
        spec = get_spec(name)
        alias = f" (predict: {spec.predict_alias})" if spec.predict_alias else ""
        lines.append(f"  {name:<18} {spec.description}{alias}")
    lines.append("\n`python -m zoo VERB TASK --help` lists that verb's options.")
    return "\n".join(lines)


@main_guard
def main(argv: list[str] | None = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return None
    if len(argv) < 2 or argv[1].startswith("-"):
        raise UserError(
            f"name a task after the verb: python -m zoo {argv[0]} TASK ...; tasks: " + ", ".join(task_names())
        )
    return run_verb(get_spec(argv[1]), argv[0], argv[2:])
