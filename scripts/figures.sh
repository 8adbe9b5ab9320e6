#!/usr/bin/env bash
# Prints the figures the README quotes, measured on this machine: search speed (and the top-rows variant
# against keeping every candidate, in the same run), the search's peak memory, balancer and memory-estimate
# speed, and the validation tables. Run after `bash scripts/demo.sh` (or any Release build in build/).
# Usage: bash scripts/figures.sh [--fuzz]   (--fuzz also runs scripts/fuzz.sh for 10^6 executions per reader)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target sapp_cli bench_search bench_balance bench_memory sapp_tests >/dev/null

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "== search (Google Benchmark; top:0 keeps every fitting candidate unfolded = the baseline)"
./build/bench/bench_search --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null | grep -E 'median|Benchmark'
echo
echo "== peak memory (RSS) of sapp search, every dimension auto"
for job in "deepseek-v3 2048 4096 4096" "llama3-70b 512 512 8192"; do
  set -- $job
  /usr/bin/time -f "$1 on $2 H100: %e s wall, %M KiB max RSS" ./build/sapp search --model "$1" --devices "$2" --global-batch "$3" --seq "$4" -q >/dev/null
done
echo
echo "== pipeline balancer"
./build/bench/bench_balance 2>/dev/null | grep -E 'BM_|Benchmark'
echo
echo "== sapp plan (search, then the 10 best layouts balanced, 1.5 s limit each)"
/usr/bin/time -f "Llama 3 70B on 64 H100 from its Megatron script: %e s wall" \
  ./build/sapp plan --from examples/megatron/llama3-70b-h100x64.sh --tp auto --pp auto --vpp auto --cp auto >/dev/null
/usr/bin/time -f "DeepSeek-V3 on 1024 Ascend 910B, every dimension auto: %e s wall" \
  ./build/sapp plan --model deepseek-v3 --devices 1024 -H ascend-910b --global-batch 4096 --seq 4096 >/dev/null
echo
echo "== memory estimates"
./build/bench/bench_memory 2>/dev/null | grep -E 'BM_|Benchmark'
echo
echo "== validation against published runs (fitted and held out apart, per regime)"
bash scripts/validation_report.sh build | tail -n 40
if [ "${1:-}" = "--fuzz" ] && [ -x scripts/fuzz.sh ]; then
  echo
  echo "== fuzzing (executions per reader)"
  bash scripts/fuzz.sh
fi
