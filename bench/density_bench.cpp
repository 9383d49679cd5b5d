// One density run (docs/density.md) per policy on the default Alibaba trace: wall time of a whole
// run (≈ 10,800 arrivals on 1,213 nodes), single-threaded. The trace is read from
// $FRACPACK_TRACE_DIR, else from shared/data next to the checkout or one of its parents.
#include <cstdlib>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "support/shared_data.hpp"

#include "fracpack/sim/density.hpp"

namespace fracpack::bench {
namespace {

std::optional<std::filesystem::path> trace_dir() {
  auto dir = test::shared_data_dir();
  if (!dir) return std::nullopt;
  return *dir / "alibaba-gpu-v2023";
}

const density::Trace* default_trace() {
  static const std::optional<density::Trace> trace = []() -> std::optional<density::Trace> {
    auto dir = trace_dir();
    if (!dir) return std::nullopt;
    auto t = density::load_trace(*dir / "openb_node_list_gpu_node.csv", *dir / "openb_pod_list_default.csv");
    if (!t) return std::nullopt;
    return std::move(*t);
  }();
  return trace ? &*trace : nullptr;
}

void BM_DensityRun(benchmark::State& state, const char* policy) {
  const density::Trace* trace = default_trace();
  if (trace == nullptr) {
    state.SkipWithError("the Alibaba trace is not found (set FRACPACK_TRACE_DIR)");
    return;
  }
  std::uint64_t seed = 42;
  double allocated = 0;
  std::int64_t arrivals = 0;
  for (auto _ : state) {
    auto r = density::run(*trace, policy, seed++, 1.3);
    if (!r) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    allocated += r->final_allocation;
    arrivals += r->arrivals;
  }
  state.counters["allocated_pct"] = allocated / static_cast<double>(state.iterations());
  state.counters["arrivals_per_s"] = benchmark::Counter(static_cast<double>(arrivals), benchmark::Counter::kIsRate);
}

const bool kRegistered = [] {
  for (const char* policy : {"fgd", "fgd-cpu", "fgd-lp", "study-best-fit", "random", "dot-product", "gpu-clustering", "gpu-packing"}) {
    benchmark::RegisterBenchmark(fmt::format("density_run/{}", policy).c_str(), [policy](benchmark::State& s) { BM_DensityRun(s, policy); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5)
        ->UseRealTime();
  }
  return true;
}();

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
