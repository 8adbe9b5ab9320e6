// Full `auto` searches (every dimension and recompute mode): DeepSeek-V3 on 2048 H100 and Llama-3-70B on 512 H100,
// as `sapp search` runs them (the 10 fastest rows, twins folded) on one thread and on all hardware threads, and
// keeping every fitting candidate unfolded (the baseline the bounded top rows are compared with), in the same
// binary. Goal: the DeepSeek-V3 search under 1 s wall on this machine's 2 cores. Memory: scripts/figures.sh.
#include <limits>
#include <thread>

#include <benchmark/benchmark.h>

#include "core/files.hpp"
#include "search/search.hpp"

namespace {

struct Fixture {
  sapp::model::Catalog catalog = sapp::model::load_catalog(sapp::io::data_dir());
  sapp::hardware::Hardware h100 = sapp::hardware::load_hardware("h100-sxm", catalog.dir);
  sapp::model::Model load(const std::string& name) {
    return sapp::model::resolve(sapp::model::load_model(name, catalog.dir), catalog.records, catalog.profiles);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void run(benchmark::State& state, const std::string& model_name, long long devices, long long gbs, long long seq) {
  auto& f = fixture();
  sapp::model::Model m = f.load(model_name);
  sapp::plan::Training t;
  t.global_batch = gbs;
  t.seq = seq;
  sapp::search::Space space;  // all auto, every recompute mode
  sapp::search::Options o;
  o.threads = static_cast<int>(state.range(0));
  bool keep_all = state.range(1) == 0;
  o.top = keep_all ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(state.range(1));
  o.fold = !keep_all;
  long long evaluated = 0;
  long long fitting = 0;
  for (auto _ : state) {
    auto r = sapp::search::search(m, space, t, f.h100, devices, f.h100.memory_bytes, o);
    evaluated = r.evaluated;
    fitting = r.fitting;
    benchmark::DoNotOptimize(r.ranked.data());
  }
  state.counters["candidates"] = static_cast<double>(evaluated);
  state.counters["fitting"] = static_cast<double>(fitting);
  state.counters["candidates_per_s"] =
      benchmark::Counter(static_cast<double>(evaluated) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Search_DeepSeekV3_2048xH100(benchmark::State& s) { run(s, "deepseek-v3", 2048, 4096, 4096); }
void BM_Search_Llama3_70B_512xH100(benchmark::State& s) { run(s, "llama3-70b", 512, 512, 8192); }

int all_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Args: threads, rows kept (0: every fitting candidate, unfolded: the baseline).
BENCHMARK(BM_Search_DeepSeekV3_2048xH100)
    ->Args({1, 0})
    ->Args({1, 10})
    ->Args({all_threads(), 10})
    ->ArgNames({"threads", "top"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Search_Llama3_70B_512xH100)
    ->Args({1, 0})
    ->Args({1, 10})
    ->Args({all_threads(), 10})
    ->ArgNames({"threads", "top"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
