#!/usr/bin/env bash
# SST-2 from the GPU-pretrained BERT-Tiny (runs/gpu/bt/b128_lr2e-3), Google's fine-tuning protocol
# for the small BERTs (Turc et al.): 4 epochs, batch size and learning rate from a grid, the run
# chosen on a dev set. Here the grid is a subset of theirs (batch 16/32/64/128 x lr 1e-4/3e-4),
# the dev set is the recipe's 2,000 carved training phrases (GLUE dev, the reported split, chooses
# nothing), and warmup is 10% of the steps as in the recipe. Usage: run.sh BATCH LR THREADS
set -euo pipefail
batch=$1 lr=$2 threads=${3:-1}
steps=$(( (65349 * 4 + batch - 1) / batch ))
out=runs/sst2-grid/b${batch}_lr${lr}
python -m zoo train bert_finetune --config configs/bert/sst2.yaml --data.data_dir=../shared/data \
  --model.init=runs/gpu/bt/b128_lr2e-3 --data.batch_size="$batch" --optim.lr="$lr" \
  --train.max_steps="$steps" --schedule.warmup_steps=$(( steps / 10 )) \
  --train.eval_every=$(( steps / 16 )) --train.save_every=$(( steps / 16 )) \
  --train.threads="$threads" --train.progress=false --train.out_dir="$out"
