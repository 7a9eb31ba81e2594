"""Scratch: zoo int8 GPT mini decode at batch 1, one thread, one variant per process."""
import copy, statistics, sys, time, warnings, torch
warnings.filterwarnings('ignore')
torch.set_num_threads(1)
import zoo.quantize as zq
from bench.gpt_speed import models, random_prompts, PRESETS
from zoo.decode import GenerationConfig, generate
variant = sys.argv[1]
if variant == 'fbgemm_eager': zq.ONE_ROW_BF16 = False
if variant == 'bf16_compiled': zq.Int8Linear.traced_product = zq.Int8Linear.bf16_product
static = variant.endswith('compiled')
p = PRESETS['mini']
i8 = zq.quantize_int8(copy.deepcopy(models('mini', p.vocab, noise=0.3)[0]))
prompts = random_prompts(p, 1)
extra = dict(cache_implementation='static', compile=True) if static else {}
cfgs = {n: GenerationConfig(max_new_tokens=n, min_new_tokens=n, eos_id=p.vocab-1, **extra) for n in (1, 128)}
generate(i8, prompts, cfgs[128])
res = []
for _ in range(9):
    generate(i8, prompts, cfgs[1]); t=time.perf_counter(); generate(i8, prompts, cfgs[1]); a=time.perf_counter()-t
    t=time.perf_counter(); generate(i8, prompts, cfgs[128]); b=time.perf_counter()-t
    res.append((b-a)/127)
print(variant, '%.3f' % (statistics.median(res)*1e3))
