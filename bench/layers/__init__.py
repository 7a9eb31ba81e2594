"""The paper's Table 1 measured: FLOPs, sequential operations, maximum path length, time and
memory of every sequence mixer in `zoo.blocks.MIXERS`. Run `python -m bench.layers`."""
