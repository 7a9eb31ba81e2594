"""GPT-2 small greedy decoding on the static cache, compiled: the cache sized to the batch (the
prompts' 64 columns + 128 new ids = 192, rounded up to 256: zoo.decode.lm_generate.static_length)
against the whole context (1,024 positions, the size before), with the growing cache beside them.
Decode tokens/s as bench.gpt_speed counts them (the full call minus a one-id call), medians of
interleaved rounds, one thread.

    OMP_NUM_THREADS=1 python bench/results/static_cache_length/compare.py > bench/results/static_cache_length/compare.log
"""

from functools import partial

import torch

from bench.gpt_speed import MIN_AGREEMENT, PRESETS, agreement, models, random_prompts
from bench.timing import cpu_model, interleaved_medians
from zoo.decode import GenerationConfig, generate

torch.set_num_threads(1)
p = PRESETS["gpt2_small"]
zoo, _ = models("gpt2_small", p.vocab, noise=0.3)
eot = zoo.vocab_size - 1
print(f"{cpu_model()}, torch {torch.__version__}, one thread; GPT-2 small, prompts of {p.prompt}, {p.new} new ids")
for batch in (1, 8):
    prompts = random_prompts(p, batch)

    def run(new: int, **cache) -> list[list[int]]:
        config = GenerationConfig(max_new_tokens=new, min_new_tokens=new, eos_id=eot, **cache)
        return generate(zoo, prompts, config)

    engines = {
        "growing": run,
        "static_fitted": partial(run, cache_implementation="static", compile=True),
        "static_context": partial(run, cache_implementation="static", compile=True, max_cache_len=zoo.max_len),
    }
    outputs = {name: engine(p.new) for name, engine in engines.items()}  # compiles, warms up
    # Random weights put near ties among 50,257 logits, where sums in another order may choose
    # the other id (bench.gpt_speed): the ids agree from the start and mostly after.
    shares = {name: agreement(ids, outputs["growing"]) for name, ids in outputs.items()}
    assert min(shares.values()) >= MIN_AGREEMENT, shares
    print(f"batch {batch}: ids equal to the growing cache's: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    fns = {f"{name}/{new}": partial(engine, new) for name, engine in engines.items() for new in (1, p.new)}
    primers = {key: partial(engines[key.split("/")[0]], 1) for key in fns}
    seconds = interleaved_medians(fns, repeats=3, warmup=0, primers=primers)
    decode = {name: batch * (p.new - 1) / (seconds[f"{name}/{p.new}"] - seconds[f"{name}/1"]) for name in engines}
    print(f"batch {batch}: " + ", ".join(f"{name} {rate:,.0f} decode tokens/s" for name, rate in decode.items()))
    print(f"  fitted / context {decode['static_fitted'] / decode['static_context']:.2f}x, "
          f"fitted / growing {decode['static_fitted'] / decode['growing']:.2f}x")
