#!/bin/bash
# Pattern of NVIDIA/Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh: one case chosen by MODEL_SIZE.
MODEL_SIZE=small
if [ ${MODEL_SIZE} == "small" ]; then
    TP=1
    NLS=24
    HS=2048
elif [ ${MODEL_SIZE} == "large" ]; then
    TP=8
    NLS=48
    HS=8192
fi
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size ${TP} --num-layers ${NLS} --hidden-size ${HS} \
    --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --global-batch-size 64 --vocab-size 50304 --bf16
