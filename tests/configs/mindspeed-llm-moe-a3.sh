#!/bin/bash
# A MindSpeed-LLM pretraining launch for an A3 node pair, written as its examples/mcore/*_A3_ptd.sh scripts are:
# Ascend runtime variables, 16 NPUs per node, MoE with the TP group extending EP, dense first layer, uneven stages.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
export HCCL_CONNECT_TIMEOUT=3600

NPUS_PER_NODE=16
NNODES=2
NODE_RANK=0
TP=2
PP=2
EP=4
MBS=1
GBS=64

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank $NODE_RANK
"

MOE_ARGS="
    --num-experts 64 \
    --moe-router-topk 8 \
    --moe-ffn-hidden-size 768 \
    --moe-layer-freq -1 \
    --first-k-dense-replace 1 \
    --moe-grouped-gemm \
    --moe-tp-extend-ep \
    --moe-permutation-async-comm \
    --moe-token-dispatcher-type alltoall_seq
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --expert-model-parallel-size ${EP} \
    --sequence-parallel \
    --num-layer-list 11,13 \
    --num-layers 24 \
    --hidden-size 2048 \
    --ffn-hidden-size 6144 \
    --num-attention-heads 32 \
    --group-query-attention \
    --num-query-groups 4 \
    --qk-layernorm \
    --swiglu \
    --disable-bias-linear \
    --untie-embeddings-and-output-weights \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --padded-vocab-size 151936 \
    --seq-length 4096 \
    --micro-batch-size ${MBS} \
    --global-batch-size ${GBS} \
    --use-flash-attn \
    --use-distributed-optimizer \
    --swap-optimizer \
    --recompute-activation-function \
    --bf16
"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS $MOE_ARGS --distributed-backend nccl
