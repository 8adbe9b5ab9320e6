torchrun pretrain_mamba.py --hidden-size 1024 --ffn-hidden-size 2048 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 \
  --global-batch-size 64 --vocab-size 32000 --squared-relu --is-hybrid-model --hybrid-layer-pattern "M*M-|M*M-M|*M-|M*M-M*" --mamba-num-heads 32 \
  --disable-bias-linear --pipeline-model-parallel-size 2 --bf16
