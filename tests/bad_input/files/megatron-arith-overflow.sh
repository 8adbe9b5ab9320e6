#!/bin/bash
# Llama-3 70B pre-training with Megatron-LM (core_v0.14.0) on 8 nodes of 8 H100 (64 GPUs), written for sapp's
# examples. Shape: Meta's Llama-3 70B config (80 layers, hidden 8192, 64 heads, 8 KV groups, FFN 28672,
# vocabulary 128256). Layout: TP 8 within a node, PP 4 with 2 virtual stages per rank, DP 2, sequence
# parallelism, the distributed optimizer, selective recompute.
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=8
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
NODE_RANK=${NODE_RANK:-0}
WORLD_SIZE=$(($GPUS_PER_NODE*66666666666666666666))

TP_SIZE=8
PP_SIZE=4

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)
MODEL_ARGS=(
    --use-mcore-models
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --untie-embeddings-and-output-weights
    --disable-bias-linear
    --attention-dropout 0.0
    --hidden-dropout 0.0
    --tokenizer-type NullTokenizer
    --vocab-size 128256
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 512
    --train-iters 100000
    --lr 1.5e-4
    --min-lr 1.5e-5
    --lr-decay-style cosine
    --bf16
    --recompute-granularity selective
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE
    --pipeline-model-parallel-size $PP_SIZE
    --num-virtual-stages-per-pipeline-rank 2
    --sequence-parallel
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    --mock-data
