// The queue replay (quota/replay.hpp) over the Alibaba trace's 149 days with the example rules
// and queues: wall time per replay and events (arrivals + departures) per second. `nodes` limits
// the cluster to the first N nodes of the list, so the same workload also runs with contention
// (waits, reclaim). The trace is read from $FRACPACK_TRACE_DIR (the folder holding
// alibaba-gpu-v2023/) or a shared/data folder next to the checkout or one of its parents.
#include <cstdlib>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "support/shared_data.hpp"

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/quota/replay.hpp"

namespace fracpack::bench {
namespace {

std::optional<std::filesystem::path> trace_dir() {
  auto dir = test::shared_data_dir();
  if (!dir) return std::nullopt;
  return *dir / "alibaba-gpu-v2023";
}

void BM_Replay(benchmark::State& state) {
  auto dir = trace_dir();
  if (!dir) return state.SkipWithError("the Alibaba trace is not found (set FRACPACK_TRACE_DIR)");
  auto nodes = trace::read_nodes(*dir / "openb_node_list_gpu_node.csv");
  auto pods = trace::read_pods(*dir / "openb_pod_list_default.csv");
  const std::filesystem::path examples = std::filesystem::path(FRACPACK_SOURCE_DIR) / "examples";
  auto rules = quota::read_rules(examples / "quota-rules.yaml");
  auto objects = k8s::read_objects_file((examples / "quota-queues.yaml").string());
  if (!nodes || !pods || !rules || !objects) return state.SkipWithError("cannot read the inputs");
  auto workload = quota::timed_workload(*pods, *rules);
  if (!workload) return state.SkipWithError(workload.status().message().c_str());
  std::vector<queues::QueueSpec> queue_specs;
  for (const auto& o : *objects) queue_specs.push_back(*queues::decode_queue(o));
  std::vector<NodeSpec> specs;
  for (std::size_t i = 0; i < nodes->size() && i < static_cast<std::size_t>(state.range(0)); ++i) {
    specs.push_back(trace::to_node_spec((*nodes)[i]));
  }
  std::int64_t events = 0;
  std::int64_t preemptions = 0;
  std::int64_t waiting = 0;
  for (auto _ : state) {
    auto r = quota::replay(specs, queue_specs, *workload, quota::ReplayOptions{});
    if (!r) return state.SkipWithError(r.status().message().c_str());
    events += r->events;
    for (const auto& q : r->queues) {
      preemptions += q.preemptions_suffered;
      waiting += q.never_started;
    }
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["preemptions"] = static_cast<double>(preemptions) / static_cast<double>(state.iterations());
  state.counters["never_started"] = static_cast<double>(waiting) / static_cast<double>(state.iterations());
}

BENCHMARK(BM_Replay)->ArgName("nodes")->Arg(1213)->Arg(40)->Arg(15)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
