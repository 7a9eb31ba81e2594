# The paper's seq2seq parser from 181,659 silver trees + the PTB sample, on one GPU, at the paper's
# width (d_model 512, 8 heads, 4+4 layers as its semi-supervised parser's depth), bf16.
# usage: bash .gpusilver/run.sh OUT TRAIN_SECONDS
set -u
OUT=$1; SECS=$2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpusilver/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/runs && tar xJf .gpusilver/data.tar.xz -C /tmp/data && xz -dc .gpusilver/silver-200000.mrg.xz > /tmp/silver.mrg
DATA=/tmp/data/shared/data; RUN=/tmp/runs/student
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/hardware.txt
python3 -c "import torch; print('torch', torch.__version__)" | tee -a $OUT/hardware.txt
nproc | tee -a $OUT/hardware.txt
date -u +%FT%TZ > $OUT/started.txt
timeout -s TERM $SECS python3 -m tasks.parsing.train --config configs/parsing/ptb_sample_seq2seq_silver.yaml \
  --data.data_dir=$DATA --data.extra_train=[/tmp/silver.mrg] \
  --model.dim=512 --model.ffn_dim=2048 --model.num_heads=8 --model.encoder_layers=4 --model.decoder_layers=4 \
  --data.max_tokens=12000 --optim.lr=0.0007 --schedule.warmup_steps=1000 --train.max_steps=100000 \
  --train.eval_every=2000 --train.save_every=500 --train.keep_last=3 --train.log_every=100 \
  --train.device=cuda --train.precision=bf16 --train.threads=4 --train.progress=false --train.tensorboard=false \
  --train.out_dir=$RUN > $OUT/train.log 2>&1
echo "train rc=$?" | tee -a $OUT/train.log
date -u +%FT%TZ >> $OUT/started.txt
cp $RUN/metrics.jsonl $RUN/config.yaml $OUT/ 2>/dev/null; cp $RUN/test.json $OUT/final_test.json 2>/dev/null
python3 -m zoo average parsing $RUN --last 3 > $OUT/average.log 2>&1
for c in best averaged; do
  python3 -m tasks.parsing.evaluate $RUN --checkpoint $c --split dev --device cuda --data_dir $DATA --json > $OUT/${c}_dev.json 2>>$OUT/eval.log
done
pick=$(python3 -c "import json; a,b=(json.load(open('$OUT/'+c+'_dev.json'))['f1'] for c in ('best','averaged')); print('averaged' if b>=a else 'best')")
echo "chosen on dev: $pick" | tee -a $OUT/eval.log
python3 -m tasks.parsing.evaluate $RUN --checkpoint $pick --split test --device cuda --data_dir $DATA --json > $OUT/${pick}_test.json 2>>$OUT/eval.log
date -u +%FT%TZ >> $OUT/started.txt
tail -5 $OUT/train.log; cat $OUT/*_dev.json $OUT/*_test.json
