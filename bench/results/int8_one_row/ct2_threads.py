"""CTranslate2 decoding GPT mini (random weights, batch 1, 128 new ids) in fp32 and int8 at one and
two threads, in its own process with nothing else running (a record of the check in
bench/results/int8.md, "One row"; run from the repository root).

    python bench/results/int8_one_row/ct2_threads.py
"""

import statistics
import tempfile
import time
from pathlib import Path

from bench.gpt_speed import PRESETS, ct2_generator, models, random_prompts

p = PRESETS["mini"]
zoo = models("mini", p.vocab, noise=0.3)[0]
prompts = [[f"t{i}" for i in row] for row in random_prompts(p, 1)]
with tempfile.TemporaryDirectory() as tmp:
    for threads in (1, 2):
        for kind in ("float32", "int8"):
            generator = ct2_generator(zoo, Path(tmp) / f"{kind}{threads}", threads, kind)
            options = dict(sampling_topk=1, include_prompt_in_result=False)
            generator.generate_batch(prompts, max_length=128, min_length=128, **options)
            rates = []
            for _ in range(5):
                generator.generate_batch(prompts, max_length=1, min_length=1, **options)
                t = time.perf_counter()
                generator.generate_batch(prompts, max_length=1, min_length=1, **options)
                one = time.perf_counter() - t
                t = time.perf_counter()
                generator.generate_batch(prompts, max_length=128, min_length=128, **options)
                full = time.perf_counter() - t
                rates.append(127 / (full - one))
            print(threads, kind, f"decode tokens/s {statistics.median(rates):.0f}", flush=True)
