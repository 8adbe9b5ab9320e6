#!/bin/bash
# Shell arithmetic beyond 64 bits in a launch script (found by fuzzing): refused, never wrapped around.
GPUS_PER_NODE=8
WORLD_SIZE=$(($GPUS_PER_NODE*66666666666666666666))
torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py \
  --tensor-model-parallel-size 8 --num-layers 80 --hidden-size 8192 --num-attention-heads 64 \
  --seq-length 8192 --micro-batch-size 1 --global-batch-size 512 --vocab-size 128256 --bf16
