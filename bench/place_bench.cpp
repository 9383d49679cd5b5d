// Placement speed on a 5,000-node × 8-GPU cluster (the target in docs/benchmarks.md: ≥ 50,000
// placements/s for `pack`). Pods come from a fixed, seeded mix of fractions (time-slicing and
// sm-sharing, sizes and portions, some on 2 devices), whole GPUs (1, 2, 4, 8) and CPU-only pods.
//
//   BM_PlaceChurn/<policy>   steady state near 75 % GPU use: each iteration places one pod and
//                            releases the oldest live one (so it also measures release).
//   BM_FillFromEmpty/<policy> an empty cluster filled with 20,000 pods, one at a time.
//   BM_SelectFullScan        the O(nodes) reference (rank_nodes) that select() must agree with.
//   BM_ExplainUnschedulable  the answer for a pod that fits nowhere: every node counted, the first
//                            100 with their own reasons (`fracpack place`'s default).
//
// The machine this runs on is shared: report the median of repetitions
// (--benchmark_repetitions=5 --benchmark_report_aggregates_only=true).
//
// Run: ./build/bench/place_bench --benchmark_counters_tabular=true
#include <deque>
#include <fstream>
#include <random>
#include <string>

#include <benchmark/benchmark.h>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack {
namespace {

constexpr int kNodes = 5000;
constexpr int kGpusPerNode = 8;
constexpr std::int64_t kGpuMiB = 81900;  // an 80 GB device, floored like KAI
constexpr std::size_t kExplainNodes = 100;  // `fracpack place`'s default --explain-nodes

ClusterState make_cluster() {
  std::vector<NodeSpec> nodes;
  nodes.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    NodeSpec n;
    n.name = fmt::format("gpu-node-{:05}", i);
    n.cpu = MilliCpu(192'000);
    n.memory = Bytes(2LL << 40);
    n.pods = 256;
    n.sharing = SharingKind::kNvFractions;
    n.fractions_ready = true;
    n.gpu_memory_known = true;
    for (int g = 0; g < kGpusPerNode; ++g) n.gpus.push_back({g, MiB(kGpuMiB)});
    nodes.push_back(std::move(n));
  }
  auto s = ClusterState::create(std::move(nodes), PlacementConfig{});
  if (!s) throw std::runtime_error(s.status().message());
  return std::move(*s);
}

/// A seeded pod mix; the same sequence every run.
class PodMix {
 public:
  explicit PodMix(std::uint32_t seed) : rng_(seed) {}

  PodRequest next() {
    PodRequest p;
    p.name = fmt::format("p{}", counter_++);
    p.cpu = MilliCpu(1000LL * pick({1, 2, 4, 8}));
    p.memory = Bytes(pick({4, 8, 16, 32}) << 30);
    const int shape = uniform(0, 99);
    if (shape < 50) {
      GpuFraction f;
      if (shape < 35) {
        f.memory = MiB(1024 * pick({5, 10, 20, 40}));
      } else {
        f.portion = MilliGpu(pick({250, 500}));
      }
      f.mode = shape % 5 == 0 ? ComputeMode::kSmSharing : ComputeMode::kTimeSlicing;
      f.container = "main";
      p.gpu = f;
    } else if (shape < 60) {
      GpuFraction f;
      f.memory = MiB(10240);
      f.num_devices = 2;
      f.container = "main";
      p.gpu = f;
    } else if (shape < 90) {
      p.gpu = WholeGpus{static_cast<int>(pick({1, 1, 2, 4, 8})), false};
    }
    return p;
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::int64_t pick(std::initializer_list<std::int64_t> options) {
    return *(options.begin() + uniform(0, static_cast<int>(options.size()) - 1));
  }
  std::mt19937 rng_;
  std::uint64_t counter_ = 0;
};

std::int64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

double gpu_use(const ClusterState& s) {
  std::int64_t free = 0;
  for (std::size_t n = 0; n < s.node_count(); ++n) free += s.summary(n).free_milli;
  return 1.0 - static_cast<double>(free) / (1000.0 * kNodes * kGpusPerNode);
}

/// Places pods from `mix` until about 75 % of GPU capacity is used; returns the placed pods' keys.
std::deque<std::string> warm_up(ClusterState& s, PodMix& mix, const Policy& policy) {
  std::deque<std::string> live;
  while (gpu_use(s) < 0.75) {
    for (int k = 0; k < 500; ++k) {  // gpu_use() is O(nodes): check it every 500 pods
      PodRequest p = mix.next();
      if (place_pod(s, p, policy, nullptr, kExplainNodes).placement) live.push_back(p.key());
    }
  }
  return live;
}

const Policy& policy_at(std::int64_t i) {
  static const auto names = policy_names();
  static std::vector<std::shared_ptr<const Policy>> policies = [] {
    std::vector<std::shared_ptr<const Policy>> out;
    for (auto n : names) out.push_back(*make_policy(n));
    return out;
  }();
  return *policies.at(static_cast<std::size_t>(i));
}


void BM_PlaceChurn(benchmark::State& state) {
  const Policy& policy = policy_at(state.range(0));
  state.SetLabel(std::string(policy.name()));
  ClusterState s = make_cluster();
  PodMix mix(42);
  std::deque<std::string> live = warm_up(s, mix, policy);
  std::int64_t placed = 0;
  std::int64_t refused = 0;
  for (auto _ : state) {
    PodRequest p = mix.next();
    if (place_pod(s, p, policy, nullptr, kExplainNodes).placement) {
      live.push_back(p.key());
      ++placed;
    } else {
      ++refused;
    }
    s.release(live.front());
    live.pop_front();
  }
  state.SetItemsProcessed(placed + refused);


  state.counters["placements/s"] = benchmark::Counter(static_cast<double>(placed + refused), benchmark::Counter::kIsRate);
  state.counters["refused"] = static_cast<double>(refused);
  state.counters["gpu_use_%"] = 100.0 * gpu_use(s);
  state.counters["peak_rss_MiB"] = static_cast<double>(peak_rss_kib()) / 1024.0;
}
BENCHMARK(BM_PlaceChurn)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_FillFromEmpty(benchmark::State& state) {
  const Policy& policy = policy_at(state.range(0));
  state.SetLabel(std::string(policy.name()));
  constexpr int kPods = 20000;
  std::int64_t decisions = 0;
  std::int64_t refused = 0;
  double use = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState s = make_cluster();
    PodMix mix(7);
    state.ResumeTiming();
    for (int i = 0; i < kPods; ++i) refused += place_pod(s, mix.next(), policy, nullptr, kExplainNodes).placement ? 0 : 1;
    decisions += kPods;
    state.PauseTiming();
    use = gpu_use(s);
    state.ResumeTiming();
  }
  state.counters["placements/s"] = benchmark::Counter(static_cast<double>(decisions), benchmark::Counter::kIsRate);
  state.counters["refused"] = static_cast<double>(refused) / static_cast<double>(state.iterations());
  state.counters["gpu_use_%"] = 100.0 * use;
}
BENCHMARK(BM_FillFromEmpty)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_SelectFullScan(benchmark::State& state) {
  const Policy& policy = policy_at(0);
  ClusterState s = make_cluster();
  PodMix mix(42);
  (void)warm_up(s, mix, policy);
  std::int64_t n = 0;
  for (auto _ : state) {
    PodRequest p = mix.next();
    benchmark::DoNotOptimize(rank_nodes(s, p, policy));
    ++n;
  }
  state.counters["decisions/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SelectFullScan)->Unit(benchmark::kMicrosecond);

void BM_ExplainUnschedulable(benchmark::State& state) {
  // The answer for a pod that fits nowhere: every node's verdict with its reason.
  const Policy& policy = policy_at(0);
  ClusterState s = make_cluster();
  PodMix mix(42);
  (void)warm_up(s, mix, policy);
  PodRequest huge;
  huge.name = "huge";
  GpuFraction f;
  f.memory = MiB(70000);
  f.num_devices = 8;
  f.container = "main";
  huge.gpu = f;
  for (auto _ : state) benchmark::DoNotOptimize(explain(s, huge, nullptr, kExplainNodes));
  state.counters["explanations/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExplainUnschedulable)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fracpack

BENCHMARK_MAIN();
