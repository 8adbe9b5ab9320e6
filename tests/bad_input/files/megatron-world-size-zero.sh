#!/bin/bash
# WORLD_SIZE of 0 devices (a node count of 0): refused by the reader; the writer had divided by it.
GPUS_PER_NODE=8
NUM_NODES=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
torchrun pretrain_gpt.py --nproc_per_node-x 8 --num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --micro-batch-size 1 --global-batch-size 8
# --nproc_per_node $GPUS_PER_NODE
