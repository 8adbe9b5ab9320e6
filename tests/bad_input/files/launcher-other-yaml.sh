#!/bin/bash
# A launcher that passes its trainer a config file and states no Megatron model flag.
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 my_trainer.py configs/llama3-8b-run.yaml --lr 3e-4
