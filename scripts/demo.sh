#!/usr/bin/env bash
# One command from a fresh Debian machine: install the dependencies, build, and run the main job on a bundled
# example (rank every parallel layout of Llama 3 70B on 64 H100s, then balance the reference PPB demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSAPP_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target sapp_cli
./build/sapp search --model llama3-70b --hardware h100-sxm --devices 64 --global-batch 128 --seq 8192 --top 10
