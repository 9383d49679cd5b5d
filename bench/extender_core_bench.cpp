// The extender core in-process (no transport): Filter, Prioritize and Bind of one pod with all
// 5,000 node names (extender_bench's pod mix), on 5,000 nodes × 8 GPUs at steady state (35,000 pods held, the oldest released
// before each new pod). What the fronts add on top is extender_bench's business.
#include <cstdlib>
#include <deque>
#include <random>

#include <benchmark/benchmark.h>

#include "fracpack/server/extender.hpp"
#include "extender_workload.hpp"

namespace fracpack::bench {
namespace {

using nlohmann::json;

void BM_CoreVerb(benchmark::State& state, int verb) {
  std::unique_ptr<Extender> core = std::move(Extender::open(ExtenderOptions{}).value());
  std::vector<json> nodes;
  std::vector<std::string> names;
  for (int n = 0; n < 5000; ++n) {
    names.push_back(fmt::format("gpu-{:05}", n));
    nodes.push_back(test::kube_node(names.back(), 8, "81559"));
  }
  if (!core->apply(nodes, nullptr).is_ok()) state.SkipWithError("apply");
  std::mt19937 rng(42);
  std::deque<std::string> held;
  auto schedule = [&](const json& pod) {
    auto f = core->filter(pod, names);
    if (!f || f->passed.empty()) return;
    auto p = core->prioritize(pod, f->passed);
    auto best = std::max_element(p->begin(), p->end(), [](const auto& a, const auto& b) { return a.score < b.score; });
    const std::string name = pod["metadata"]["name"];
    if (core->bind("team-a", name, pod["metadata"]["uid"], best->host)) held.push_back("team-a/" + name);
  };
  int serial = 0;
  const char* window = std::getenv("FRACPACK_BENCH_WINDOW");
  for (int i = 0, w = window ? std::atoi(window) : 35000; i < w; ++i) schedule(extender_workload_pod(rng, fmt::format("fill-{}", serial++)));
  for (auto _ : state) {
    state.PauseTiming();
    (void)core->release(held.front());
    held.pop_front();
    json pod = extender_workload_pod(rng, fmt::format("pod-{}", serial++));
    state.ResumeTiming();
    if (verb == 0) {
      benchmark::DoNotOptimize(core->filter(pod, names));
    } else if (verb == 1) {
      benchmark::DoNotOptimize(core->prioritize(pod, names));
    } else {
      schedule(pod);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_CoreVerb, filter_5000_names, 0)->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK_CAPTURE(BM_CoreVerb, prioritize_5000_names, 1)->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK_CAPTURE(BM_CoreVerb, filter_prioritize_bind, 2)->Unit(benchmark::kMicrosecond)->Iterations(2000);

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
