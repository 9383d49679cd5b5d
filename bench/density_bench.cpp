// One density run (docs/density.md) per policy on the default Alibaba trace: wall time of a whole
// run (≈ 10,800 arrivals on 1,213 nodes), single-threaded; and one dynamic run (pods come and go,
// ≈ 33,000 pods at 85 % and 100 % offered demand) per policy with and without consolidation; and
// the ceiling with CPU (capacity_ceiling.hpp) of one run's arrivals. The trace is read from
// $FRACPACK_TRACE_DIR, else from shared/data next to the checkout or one of its parents.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "support/shared_data.hpp"

#include "fracpack/sim/density.hpp"
#include "fracpack/sim/capacity_ceiling.hpp"
#include "fracpack/sim/density_dynamic.hpp"

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

void BM_DynamicRun(benchmark::State& state, const char* policy, double load, bool consolidation) {
  const density::Trace* trace = default_trace();
  if (trace == nullptr) {
    state.SkipWithError("the Alibaba trace is not found (set FRACPACK_TRACE_DIR)");
    return;
  }
  density::DynamicOptions options;
  options.load = load;
  options.consolidation = consolidation;
  std::uint64_t seed = 42;
  double multi = 0;
  std::int64_t moves = 0;
  std::int64_t pods = 0;
  for (auto _ : state) {
    auto r = density::run_dynamic(*trace, policy, seed++, options);
    if (!r) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    multi += r->pending_gpu_hours_multi;
    moves += r->moves;
    pods += r->arrivals;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["pending_gpu_h_multi"] = multi / n;
  state.counters["moves"] = static_cast<double>(moves) / n;
  state.counters["pods_per_s"] = benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsRate);
}

/// The LP of the ceiling with CPU over seed 42's arrivals at 130 %: those up to 100 % of the GPU
/// capacity placed, the rest failed (a run's split is much like it).
void BM_CapacityCeiling(benchmark::State& state) {
  const density::Trace* trace = default_trace();
  if (trace == nullptr) {
    state.SkipWithError("the Alibaba trace is not found (set FRACPACK_TRACE_DIR)");
    return;
  }
  std::vector<const trace::TracePod*> placed;
  std::vector<const trace::TracePod*> failed;
  std::int64_t arrived = 0;
  for (std::size_t i : density::inflate(trace->pods, trace->gpus * 1000, 1.3, 42)) {
    arrived += trace->pods[i].gpu_total().count();
    (arrived <= trace->gpus * 1000 ? placed : failed).push_back(&trace->pods[i]);
  }
  double pct = 0;
  for (auto _ : state) pct = density::capacity_ceiling(trace->nodes, placed, failed).allocation_pct;
  state.counters["ceiling_pct"] = pct;
}

const bool kRegistered = [] {
  benchmark::RegisterBenchmark("density_ceiling/cpu", BM_CapacityCeiling)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
  for (double load : {0.85, 1.0}) {
    for (const char* policy : {"fgd", "fgd-lp"}) {
      for (bool consolidation : {false, true}) {
        const std::string name =
            fmt::format("dynamic_run/load_{:.0f}/{}/consolidation_{}", load * 100, policy, consolidation ? "on" : "off");
        benchmark::RegisterBenchmark(name.c_str(), [policy, load, consolidation](benchmark::State& s) {
          BM_DynamicRun(s, policy, load, consolidation);
        })
            ->Unit(benchmark::kMillisecond)
            ->Iterations(3)
            ->UseRealTime();
      }
    }
  }
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
