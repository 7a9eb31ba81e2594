"""python -m zoo: the shared verbs (see zoo.verbs.cli)."""

from zoo.verbs.cli import main

main()
