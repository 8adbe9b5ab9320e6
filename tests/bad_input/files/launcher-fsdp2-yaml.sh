source examples/fsdp2/env_config.sh
export HCCL_CONNECT_TIMEOUT=1200
NPUS_PER_NODE=16
# The trainer reads its own YAML; the script states no Megatron model flag (MindSpeed-LLM's FSDP2 launchers).
torchrun --nproc_per_node $NPUS_PER_NODE train_fsdp2.py examples/fsdp2/qwen3/pretrain_qwen3_8b_4k_fsdp2_A3.yaml \
    --parallel.fsdp_size 16 \
    --training.per_device_train_batch_size 1
