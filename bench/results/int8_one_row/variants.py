"""zoo int8 GPT mini decoding at batch 1, one thread, one Int8Linear path per process (a record of
the scratch comparison in bench/results/int8.md, "One row"; run from the repository root).

    python bench/results/int8_one_row/variants.py fbgemm_eager|bf16_eager|bf16_compiled|int_mm_compiled
"""

import copy
import statistics
import sys
import time
import warnings

import torch

import zoo.quantize as zq
from bench.gpt_speed import PRESETS, models, random_prompts
from zoo.decode import GenerationConfig, generate

warnings.filterwarnings("ignore")
torch.set_num_threads(1)
variant = sys.argv[1]
if variant == "fbgemm_eager":  # one row through fbgemm, as before the bf16 path
    zq.ONE_ROW_BF16 = False
if variant == "bf16_compiled":  # the compiled step through the bf16 path instead of _int_mm
    zq.Int8Linear.traced_product = zq.Int8Linear.bf16_product
static = variant.endswith("compiled")
p = PRESETS["mini"]
i8 = zq.quantize_int8(copy.deepcopy(models("mini", p.vocab, noise=0.3)[0]))
prompts = random_prompts(p, 1)
extra = dict(cache_implementation="static", compile=True) if static else {}
eos = p.vocab - 1
cfgs = {n: GenerationConfig(max_new_tokens=n, min_new_tokens=n, eos_id=eos, **extra) for n in (1, 128)}
generate(i8, prompts, cfgs[128])
res = []
for _ in range(9):
    generate(i8, prompts, cfgs[1])
    t = time.perf_counter()
    generate(i8, prompts, cfgs[1])
    one = time.perf_counter() - t
    t = time.perf_counter()
    generate(i8, prompts, cfgs[128])
    full = time.perf_counter() - t
    res.append((full - one) / 127)
print(variant, f"{statistics.median(res) * 1e3:.3f}")  # ms a decoded token
