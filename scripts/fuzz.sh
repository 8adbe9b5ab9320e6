#!/usr/bin/env bash
# Fuzzes every reader (and the framework-config writers, on each file that reads) under ASan + UBSan (libFuzzer; needs clang) and prints the executions per target.
#
#   scripts/fuzz.sh                 each target for 1000000 executions
#   scripts/fuzz.sh --runs N        each target for N executions
#   scripts/fuzz.sh --brief [S]     each target for S seconds (default 10), for CI
#   scripts/fuzz.sh ... TARGET...   only these targets (names as in fuzz/CMakeLists.txt: hardware, model_json, ...)
#   FUZZ_JOBS=N scripts/fuzz.sh     build with N jobs and fuzz N targets at a time (default: build 2, fuzz 1)
#
# Each target starts from its committed seeds in fuzz/corpus/<target>/ and grows a scratch corpus under
# build-fuzz/corpus/<target>/ (the committed seeds are never written). A crash, leak, timeout or undefined
# behaviour stops that target, leaves its input in build-fuzz/artifacts/ and makes the script exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=1000000
seconds=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --brief)
      seconds=10
      if [[ $# -gt 1 && "$2" =~ ^[0-9]+$ ]]; then seconds="$2"; shift; fi
      shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(expr hardware model_json model_yaml op_records op_profile layers measured manual search runs megatron mindformers hyperparallel torchtitan automodel huggingface)
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all[@]}"); fi

build=build-fuzz
source scripts/build_dir.sh
reset_foreign_build_dir "$build"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAPP_FUZZ=ON -DSAPP_BENCH=OFF -DSAPP_PYTHON=OFF -DSAPP_UNITY=ON -DSAPP_PCH=OFF >/dev/null
fi
cmake --build "$build" -j"${FUZZ_JOBS:-2}" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

mkdir -p "$build/artifacts"
# fuzz_one TARGET: one libFuzzer run; its exit status says whether it found nothing.
fuzz_one() {
  local t="$1" scratch="$build/corpus/$1" limit=(-runs="$runs")
  mkdir -p "$scratch"
  if [[ -n "$seconds" ]]; then limit=(-max_total_time="$seconds"); fi
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "./$build/fuzz/fuzz_$t" "${limit[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "$scratch" "fuzz/corpus/$t" >"$build/fuzz_$t.log" 2>&1
}
# FUZZ_JOBS targets run at a time (each libFuzzer run uses one core); the table is printed in the targets' order.
parallel="${FUZZ_JOBS:-1}"
declare -A pid_of
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do wait -n || true; done
  fuzz_one "$t" &
  pid_of[$t]=$!
done
status=0
printf '%-12s %12s %9s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  log="$build/fuzz_$t.log"
  result=ok
  if ! wait "${pid_of[$t]}"; then
    result="FAILED (see $log)"
    status=1
  fi
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  elapsed=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  printf '%-12s %12s %9s  %s\n' "$t" "${executions:-?}" "${elapsed:-?}" "$result"
done
exit $status
