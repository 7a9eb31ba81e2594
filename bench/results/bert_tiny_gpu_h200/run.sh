# BERT-Tiny pretraining on enwiki-extract at batch 128/256 on one GPU, three settings side by side.
# usage: bash .gpudata/run.sh DATA_DIR OUT STEPS_SCALE SECONDS DEVICE
set -u
mkdir -p /tmp/bt
DATA=$1; OUT=$2; SCALE=$3; SECS=$4; DEV=$5
common="--config configs/bert/bert_tiny.yaml --data.data_dir=$DATA --train.device=$DEV --train.threads=2 --data.tokenizer=.gpudata/vocab.txt
  --train.eval_every=$((2000/SCALE)) --train.save_every=$((2000/SCALE)) --train.keep_last=1 --train.log_every=$((500/SCALE))
  --train.progress=false --train.tensorboard=false --schedule.warmup_steps=$((2000/SCALE))"
[ "$DEV" = cuda ] && common="$common --train.precision=bf16"
run() { name=$1; shift; timeout -s TERM $SECS python3 -m tasks.bert.train $common --train.out_dir=/tmp/bt/$name "$@" > /tmp/bt/$name.log 2>&1; echo "$name rc=$?" >> $OUT/summary.txt; }
run b256_lr2e-3 --data.batch_size=256 --optim.lr=0.002 --train.max_steps=$((20000/SCALE)) &
run b256_lr1e-3 --data.batch_size=256 --optim.lr=0.001 --train.max_steps=$((20000/SCALE)) &
run b128_lr2e-3 --data.batch_size=128 --optim.lr=0.002 --train.max_steps=$((32000/SCALE)) &
wait
for f in /tmp/bt/*.log; do echo "== $f"; grep -a "^step\|stopped\|tokens/s\|rror" $f | tail -4; done >> $OUT/summary.txt
cat $OUT/summary.txt
tar cf /tmp/bt.tar --exclude='step_*' -C /tmp bt && split -b 15M /tmp/bt.tar $OUT/bt.tar.part-
ls -la $OUT
