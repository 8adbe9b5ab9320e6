#!/usr/bin/env bash
# One command from a fresh Debian machine: install the dependencies, build, and run the main job on a bundled
# example: rank every parallel layout of Llama 3 70B on 64 H100s, then balance the reference PPB demo (96 layers,
# 16 stages, interleave 3) and draw its schedule.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target sapp_cli
./build/sapp search --model llama3-70b --hardware h100-sxm --devices 64 --global-batch 128 --seq 8192 --top 10
./build/sapp balance --layers data/layers/demo.json --stages 16 --micro-batches 16 --interleave 3 --memory-limit 56000 \
  --less-memory --naive --svg build/demo-pipeline.svg
echo "timeline and memory curves: build/demo-pipeline.svg"
