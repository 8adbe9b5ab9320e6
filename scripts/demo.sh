#!/usr/bin/env bash
# One command from a fresh Debian machine: install the dependencies, build the CLI and the Python module, and run
# the main job on a bundled example: plan Llama 3 70B on 64 H100s from its Megatron-LM launch script (search every
# layout, balance layers and recompute per pipeline stage for the best ones, write the plan back as a Megatron
# script and an HTML report), then balance the reference planner's demo pipeline and draw its schedule.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(sapp_cli)
# The target list (Make's or Ninja's format) is captured first: piped into `grep -q` under pipefail, cmake's SIGPIPE could hide the target.
build_targets=$(cmake --build build --target help)
if grep -qE '(^| )_sapp(:| |$)' <<<"$build_targets"; then targets+=(_sapp); fi
cmake --build build -j"$(nproc)" --target "${targets[@]}"
./build/sapp plan --from examples/megatron/llama3-70b-h100x64.sh --tp auto --pp auto --vpp 1,2,3,4 --cp auto --mbs auto --recompute auto --top 10 \
  --report build/plan-report.html --emit megatron --output build/llama3-70b-plan.sh
./build/sapp balance --layers data/layers/demo.json --stages 16 --micro-batches 16 --interleave 3 --memory-limit 56000 \
  --less-memory --naive --svg build/demo-pipeline.svg
echo
echo "report: build/plan-report.html; the plan as a Megatron launch script: build/llama3-70b-plan.sh"
echo "timeline and memory curves of the balanced demo pipeline: build/demo-pipeline.svg"
echo "Python: PYTHONPATH=build/python python3 -c 'import sapp; print(sapp.estimate(\"llama3-70b\", \"h100-sxm\", 64, 128, 8192, tp=4, pp=4, sp=True)[\"step_time_s\"])'"
