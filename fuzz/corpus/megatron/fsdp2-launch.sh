NPUS_PER_NODE=8
NNODES=1
torchrun --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES train_fsdp2.py examples/fsdp2/qwen3/run.yaml \
    --model.model_name_or_path /home/data/Qwen3-8B/ --parallel.fsdp_size 8 --parallel.ep_size 1 --parallel.cp_size 2 --parallel.cp_type ring \
    --training.per_device_train_batch_size 1 --training.gradient_accumulation_steps 4 --optimization.chunk_loss_size 1024 --optimization.use_fused_rmsnorm
