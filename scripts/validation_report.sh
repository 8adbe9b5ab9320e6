#!/usr/bin/env bash
# Prints sapp's estimates against every published run in validation/runs.yaml: per run (estimated vs measured step
# time and peak memory, with the step-time breakdown), then per regime (dense, moe, long_context, fsdp, lora) the median
# and worst |error| of the fitted rows and of the held-out rows apart, and which regimes are known gaps.
# Usage: scripts/validation_report.sh [build-dir]   (builds sapp_tests if needed; 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -x "$build/tests/sapp_tests" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target sapp_tests >/dev/null
fi
"$build/tests/sapp_tests" --gtest_filter='Validation*:CostOverlap*' --gtest_brief=0 2>&1 |
  grep -v -E '^\[ *(RUN|OK|PASSED|==========|----------) ' | grep -v '^Running main\|^Note: Google Test filter'
