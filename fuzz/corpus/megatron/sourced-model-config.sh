#!/bin/bash
# A model config a launcher sources: flags in variables, no command.
TOKENIZER_MODEL=meta-llama/Llama-4-Scout-17B-16E-Instruct
MODEL_ARGS=" \
    --num-layers 8 \
    --hidden-size 1024 \
    --ffn-hidden-size 4096 \
    --num-attention-heads 16 \
    --group-query-attention \
    --num-query-groups 4 \
    --num-experts 8 \
    --moe-router-topk 1 \
    --moe-ffn-hidden-size 1024 \
    --moe-layer-freq ([0,1]*3+[1]*2) \
    --window-size 127,0 \
    --window-attn-skip-freq 2 \
    --position-embedding-type rope \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --seq-length 4096 \
    --vocab-size 32000 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
"
