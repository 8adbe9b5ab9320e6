#!/usr/bin/env bash
# One command from a fresh Debian machine: install the dependencies, build with -Wall -Wextra -Werror, run the
# whole test suite (unit, CLI, bad-input corpus, validation, Python, the HTML report in headless Chromium), then
# again with clang under AddressSanitizer + UBSan, fuzz every reader briefly and run clang-tidy; formatting is checked first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)
step() { printf "\n== %s (%ds since start)\n" "$1" "$SECONDS"; }
# A build directory configured from another checkout (a copied tree keeps its ignored build*/ folders) would make
# CMake refuse to configure: start such a directory afresh.
source scripts/build_dir.sh
# Ninja compiles every layer's sources at once (Make waits for each library before compiling the next): on 2 cores
# the sanitizer build took 193 s instead of 318 s. A build folder configured before keeps its own generator.
export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"

# Formatting first: it takes a second and fails before the builds do.
step clang-format
clang-format --dry-run --Werror $(git ls-files 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'fuzz/*.cpp' 'python/*.cpp')

# The GoogleTest program in $jobs processes, GoogleTest's own round-robin shards (a process per test, as ctest
# runs them, spent 30 of the 66 s on starting 2000 processes). Arguments: build folder, gtest filter, then
# environment assignments.
run_test_shards() {
  local dir=$1 filter=$2
  shift 2
  local shard pids=()
  for ((shard = 0; shard < jobs; shard++)); do
    env "$@" GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$shard" "$dir/tests/sapp_tests" --gtest_filter="$filter" \
      --gtest_brief=1 >"$dir/tests-shard-$shard.log" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < jobs; shard++)); do
    if ! wait "${pids[$shard]}"; then
      cat "$dir/tests-shard-$shard.log"
      echo "tests failed in shard $shard of $dir (log: $dir/tests-shard-$shard.log)"
      exit 1
    fi
    tail -n 3 "$dir/tests-shard-$shard.log"
  done
}

step "configure the clang ASan+UBSan build; clang-tidy starts in the background"
# After the gcc build, everything again with clang under AddressSanitizer + UBSan (any undefined behaviour aborts),
# the libraries instrumented for libFuzzer too: the whole test suite, then every reader fuzzed a few seconds
# (scripts/fuzz.sh without --brief runs 10^6 executions per target). The gcc build is the -Werror gate.
# A unity build (SAPP_UNITY: sources compiled in batches) takes about 40 % less CPU; the gcc build compiles
# every file on its own, so a missing include cannot hide behind a batch.
reset_foreign_build_dir build-fuzz
# -O1 with line tables only (symbolized stack traces): on 2 cores it builds faster than RelWithDebInfo's -O2 -g
# and runs the suite in the same time (122.5 s against 124 s measured). SAPP_PCH OFF: clang-tidy reads
# this build's compile database.
# The tests' own code at -O0 (SAPP_TESTS_O0): their three batches compiled in 73 s on 2 cores instead of about 150 s,
# and the sanitized suite then ran 72 s per shard instead of 46 s (2026-12-07): about 45 s less in all. The layers
# above the engines and the command line at -O0 too (SAPP_COLD_O0), with the fuzz targets' bodies compiled once
# (fuzz/CMakeLists.txt): this build took 209 s instead of 262 s (415 against 538 s of CPU) and the sanitized suite
# 69 s instead of 53 s on the slower shard; the brief fuzzing below runs the framework readers 2-4 x fewer times.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only" -DSAPP_FUZZ=ON -DSAPP_BENCH=OFF -DSAPP_PYTHON=OFF -DSAPP_PCH=OFF \
  -DSAPP_UNITY=ON -DSAPP_TESTS_O0=ON -DSAPP_COLD_O0=ON -DSAPP_WERROR=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON

# clang-tidy (checks in .clang-tidy) over the library in two units, its engines and the layers above them
# (scripts/tidy_units.py: every check walks the third-party headers too, so two units took 104 s of one core where
# the eleven unity batches took about 210 s, 2026-12-07), each source checked through the header filter (src/).
# src/cli is left out because clang-tidy 14 cannot parse CLI11's headers, and the tests' batches too: the header
# filter leaves their own code out, and the src/ headers they include are checked through the library's units; the
# fuzz targets' bodies likewise.
# It reads only the compile database and the batches' sources, both written by the configuration above, so it runs
# from here on at the lowest priority: it takes the cores the builds and tests leave idle (linking, a build's last
# file, the shorter test shard, the single-process tests) and the rest at the end.
tidy_log=$(mktemp)
python3 scripts/tidy_units.py build-fuzz build-fuzz/tidy >"$tidy_log.files"
# Its own session (setsid; -w passes its exit status on should setsid have to fork), so that a failure can stop it as
# one process group; under the kernel's autogroup scheduling a session is weighed as a whole against the others
# whatever its processes' nice value, so the session's own weight is lowered too (/proc/self/autogroup; nice alone
# left it a third of the cores).
# shellcheck disable=SC2016
setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 xargs -P"$1" -n1 clang-tidy -p build-fuzz/tidy \
  --config-file=.clang-tidy --checks=-bugprone-suspicious-include --quiet --warnings-as-errors="*"' tidy "$jobs" \
  <"$tidy_log.files" >"$tidy_log" 2>&1 &
tidy_pid=$!
# A failure anywhere below stops the background clang-tidy (its own process group, setsid) with the script.
trap 'kill -- -"$tidy_pid" 2>/dev/null; true' EXIT

step "gcc Release build and tests"

reset_foreign_build_dir build
# The tests' own code at -O0 here too: their batches took 44 s of CPU instead of 71 s at -O1, the suite ran as fast.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSAPP_TESTS_O0=ON -DSAPP_WERROR=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
cmake --build build -j"$jobs"
run_test_shards build '*'
# The tests that are not GoogleTest's: the Python bindings and the HTML report in headless Chromium.
ctest --test-dir build --output-on-failure -R '^(python_bindings|html_report)$'

step "clang ASan+UBSan build, tests and fuzzing"
cmake --build build-fuzz -j"$jobs"
# The balancer's long optimisations (time-limited, so their plans would depend on the sanitizers' slowdown), its
# exhaustive comparisons (the end-stage bound's alone took 33 of the remaining 156 s under the sanitizers) and the
# end-to-end plan, write-back (search, --emit, estimate --from: the readers and writers are unit-tested here too)
# and browser runs are left to the Release run above. The test program runs in $jobs shards of one process each rather than one
# process per test (ctest): starting 1994 sanitized processes took most of the 120 s this stage spent.
slow='*DemoReadBack*:*BalanceReadBack*:Balance.OptimiserEquals*:Balance.InterleavedBound*:Balance.ExcursionBound*'
slow+=':Balance.EndStageBound*:Simulator.PeakMemoryEqualsTheOptimisersModel*:BalanceCli*:PlanCommand*:*EmitReadBack*'
# The two validation statements that search every published problem (dense top five, expert layouts) took 236 of
# the 272 s the validation suites ran sanitized (2026-12-06): the search they run is sanitized through Search.*,
# and the Release run above checks their figures.
slow+=':Validation.SearchRanksThePublishedDenseLayoutInTheTopFive:Validation.PublishedExpertLayoutsAgainstTheBestCandidate'
# The same searches repeated at several thread counts to compare their results, and a long search run for its silence
# (26, 23 and 16 s sanitized, 2026-12-06; a run of this script took 905 s): the search's threads are sanitized
# through the other Search.* tests, and the Release run above checks the equalities.
slow+=':SearchCli.OutputIsByteIdenticalForAnyThreadCount:Search.ResultsAreIdenticalForAnyThreadCount:Progress.SilentWhenStderrIsNotATerminal'
# A balancer run cut at many time limits (time-limited, like the optimisations above) and a search over every hybrid
# layout: 13.7 and 14.1 s sanitized, both in the first of the two shards, which ran 107 s against 48 s (2026-12-07).
slow+=':Balance.ATimeLimitAtAnyPointLeavesAValidAnswer:Search.HybridStacksKeepAnEvenSplitWithoutVirtualPipeline'
# Every bundled file checked as its kind, and every bundled model written and read back: 17.0 and 8.0 s sanitized, both
# in the second shard, which ran 103 s against 44 s (2026-12-07, in a run of 892 s); the readers they go through are
# sanitized by their own tests and fuzzed below, and the Release run above checks both.
slow+=':Check.EveryBundledFileIsOkAsItsKind:EmitNewFile.BundledModelsReadBackAsPriced'
# A balancer run over every block-recompute count and a whole search rendered as a 120-column table: 6.6 and 6.4 s
# sanitized, both in the slower shard (76 s against 52 s, in a run of 879 s, 2026-12-07); the balancer and the table
# are sanitized through their other tests, and the Release run above checks both.
slow+=':Balance.MegatronBlockRecomputeKeepsOneCountForEveryCell:SearchTable.FitsA120ColumnTerminal'
# Two exhaustive comparisons of the balancer (several BODY types with interleaving: its plan and its bound against
# every plan) and two searches repeated at several thread counts or unfolded (the top rows against the whole
# ranking, folded twins against every fitting layout): 12.4, 7.9, 7.7 and 6.9 s sanitized with the tests' code at
# -O0 (2026-12-07); the balancer and the search are sanitized through their other tests, the Release run checks these.
slow+=':Balance.SeveralBodyTypesWithInterleavingKeepModelOrderAndTheFrameworksRecomputeOrder'
slow+=':Balance.SeveralTypesInterleavedBoundNeverExceedsTheExhaustiveOptimum:SearchRows.*'
# A YAML alias bomb refused after a million values converted: 11.0 s sanitized, the slowest test of the slower shard
# (69 s against 52 s, 2026-12-07); the converter's budget is sanitized through the smaller files of the corpus.
slow+=':Cases/BadInputCorpus.RefusedByName/model_YAML_alias_bomb'
run_test_shards build-fuzz "-$slow" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
FUZZ_JOBS="$jobs" bash scripts/fuzz.sh --brief 2

step "clang-tidy (waiting for its background run)"
if ! wait "$tidy_pid"; then
  grep -v 'warnings generated' "$tidy_log"
  exit 1
fi
trap - EXIT
echo "clang-tidy: clean"

echo "all checks passed in ${SECONDS}s"
