// Memory estimates per second for one layout (issue: >= 1 million estimates/s on one core for DeepSeek-V3).
// The Llama-3-8B estimate (one layer kind instead of three) runs in the same binary as a baseline.
#include <benchmark/benchmark.h>

#include "core/files.hpp"
#include "cost/memory.hpp"

namespace {

struct Fixture {
  sapp::model::Catalog catalog = sapp::model::load_catalog(sapp::io::data_dir());
  sapp::model::Model deepseek = sapp::model::resolve(sapp::model::load_model("deepseek-v3", catalog.dir), catalog.records, catalog.profiles);
  sapp::model::Model llama = sapp::model::resolve(sapp::model::load_model("llama3-8b", catalog.dir), catalog.records, catalog.profiles);
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_EstimateMemory_DeepSeekV3(benchmark::State& state) {
  auto& f = fixture();
  sapp::plan::Training t;
  t.seq = 4096;
  t.global_batch = 4096;
  sapp::plan::Layout l;  // 2048 H100: TP 8, PP 16, EP 64, DP 16, interleaved 2, selective recompute
  l.tp = 8;
  l.sp = true;
  l.pp = 16;
  l.vpp = 2;
  l.dp = 16;
  l.ep = 64;
  l.micro_batches = 256;
  l.recompute = sapp::plan::Recompute::Selective;
  for (auto _ : state) {
    auto est = sapp::cost::estimate_memory(f.deepseek, l, t, 85520809984.0);
    benchmark::DoNotOptimize(est.peak_bytes);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EstimateMemory_DeepSeekV3);

void BM_EstimateMemory_Llama3_8B_baseline(benchmark::State& state) {
  auto& f = fixture();
  sapp::plan::Training t;
  t.seq = 8192;
  t.global_batch = 64;
  sapp::plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.dp = 4;
  l.micro_batches = 16;
  for (auto _ : state) {
    auto est = sapp::cost::estimate_memory(f.llama, l, t, 85520809984.0);
    benchmark::DoNotOptimize(est.peak_bytes);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EstimateMemory_Llama3_8B_baseline);

}  // namespace

BENCHMARK_MAIN();
