torchrun pretrain_gpt.py --bf16 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --vocab-size 32000 --num-layers 16
