A=" \
    --num-layers 4 \
    --hidden-size 1024 \
"
torchrun --nproc_per_node 8 pretrain_gpt.py ${A} --num-attention-heads 16 --vocab-size 32000 --seq-length 1024 --micro-batch-size 1 --global-batch-size 8
