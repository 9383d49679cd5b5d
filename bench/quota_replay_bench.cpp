// The queue replay (quota/replay.hpp) over the Alibaba trace's 149 days with the example rules,
// and the quota tuner (quota/tune.hpp) on top of it: wall time per replay, events (arrivals +
// departures) per second, and wall time per tuning run.
//   BM_Replay/nodes:N      examples/quota-queues.yaml on the first N nodes of the list (1,213: the
//                          whole cluster; 40 and 15: the same workload with contention)
//   BM_ReplaySmall/timeline:T  examples/quota-queues-small.yaml on 2 % of the nodes spread over
//                          the list (--node-fraction 0.02, 118 GPUs), with the timeline (T=1) or
//                          without it (T=0, as the tuner replays)
//   BM_Tune                `quota tune` on that cluster: "p95 pending of inference <= 60s, then
//                          maximise allocation", to convergence, two candidates at a time
// The trace is read from $FRACPACK_TRACE_DIR (the folder holding alibaba-gpu-v2023/) or a
// shared/data folder next to the checkout or one of its parents.
#include <cstdlib>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "support/shared_data.hpp"

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/sim/quota/replay.hpp"
#include "fracpack/sim/quota/tune.hpp"
#include "jobs/quota_inputs.hpp"

namespace fracpack::bench {
namespace {

/// The whole node list, the example workload and the Queue objects of `queue_file` (in examples/).
struct Inputs {
  std::vector<NodeSpec> nodes;
  quota::TimedWorkload workload;
  std::vector<queues::QueueSpec> queues;
};

std::optional<Inputs> load(benchmark::State& state, const std::string& queue_file, double node_fraction) {
  auto dir = test::shared_data_dir();
  if (!dir) {
    state.SkipWithError("the Alibaba trace is not found (set FRACPACK_TRACE_DIR)");
    return std::nullopt;
  }
  const std::filesystem::path examples = std::filesystem::path(FRACPACK_SOURCE_DIR) / "examples";
  QuotaInputFiles files;
  files.nodes = (*dir / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv").string();
  files.pods = (*dir / "alibaba-gpu-v2023" / "openb_pod_list_default.csv").string();
  files.rules = (examples / "quota-rules.yaml").string();
  files.queues = (examples / queue_file).string();
  files.node_fraction = node_fraction;
  auto in = read_quota_inputs(files);
  if (!in) {
    state.SkipWithError(in.status().message().c_str());
    return std::nullopt;
  }
  return Inputs{std::move(in->nodes), std::move(in->workload), std::move(in->queues)};
}

void replay_loop(benchmark::State& state, const Inputs& in, const std::vector<NodeSpec>& nodes, const quota::ReplayOptions& options) {
  std::int64_t events = 0, preemptions = 0, waiting = 0, moved = 0;
  for (auto _ : state) {
    auto r = quota::replay(nodes, in.queues, in.workload, options);
    if (!r) return state.SkipWithError(r.status().message().c_str());
    events += r->events;
    for (const auto& q : r->queues) {
      preemptions += q.preemptions_suffered;
      waiting += q.never_started;
      moved += q.moved;
    }
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["preemptions"] = static_cast<double>(preemptions) / static_cast<double>(state.iterations());
  state.counters["never_started"] = static_cast<double>(waiting) / static_cast<double>(state.iterations());
  state.counters["moved"] = static_cast<double>(moved) / static_cast<double>(state.iterations());
}

void BM_Replay(benchmark::State& state) {
  auto in = load(state, "quota-queues.yaml", 1.0);
  if (!in) return;
  const std::vector<NodeSpec> nodes(in->nodes.begin(), in->nodes.begin() + std::min<std::ptrdiff_t>(state.range(0), std::ssize(in->nodes)));
  replay_loop(state, *in, nodes, quota::ReplayOptions{});
}

void BM_ReplaySmall(benchmark::State& state) {
  auto in = load(state, "quota-queues-small.yaml", 0.02);
  if (!in) return;
  quota::ReplayOptions options;
  options.timeline = state.range(0) != 0;
  replay_loop(state, *in, in->nodes, options);
}

void BM_Tune(benchmark::State& state) {
  auto in = load(state, "quota-queues-small.yaml", 0.02);
  if (!in) return;
  auto leaves = quota::leaves_and_weights(in->queues);
  if (!leaves) return state.SkipWithError(leaves.status().message().c_str());
  auto objective = quota::parse_objective("p95 pending of inference <= 60s, then maximise allocation", leaves->first, leaves->second);
  if (!objective) return state.SkipWithError(objective.status().message().c_str());
  quota::TuneOptions options;
  options.budget_seconds = 0;
  options.jobs = 2;
  std::size_t candidates = 0, rounds = 0;
  for (auto _ : state) {
    auto r = quota::tune(in->nodes, in->queues, in->workload, *objective, options);
    if (!r) return state.SkipWithError(r.status().message().c_str());
    if (!r->candidates.front().score.feasible()) return state.SkipWithError("the tuner missed a feasible objective");
    candidates += r->evaluated;
    rounds += r->rounds;
  }
  state.counters["candidates"] = static_cast<double>(candidates) / static_cast<double>(state.iterations());
  state.counters["rounds"] = static_cast<double>(rounds) / static_cast<double>(state.iterations());
  state.counters["candidates_per_s"] = benchmark::Counter(static_cast<double>(candidates), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Replay)->ArgName("nodes")->Arg(1213)->Arg(40)->Arg(15)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReplaySmall)->ArgName("timeline")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_Tune)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
