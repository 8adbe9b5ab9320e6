torchrun pretrain_gpt.py --num-experts 512 --moe-router-topk 10 --n-shared-experts 1 --moe-ffn-hidden-size 512 --qk-layernorm --kv-channels 256 \
  --num-layers 48 --hidden-size 2048 --ffn-hidden-size 5120 --num-attention-heads 16 --padded-vocab-size 151936 \
  --experimental-attention-variant gated_delta_net --linear-attention-freq 4 --linear-num-value-heads 32 --linear-conv-kernel-dim 4
