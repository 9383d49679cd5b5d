// The extender core fed by the watch (no transport): the initial list of 5,000 nodes × 8 GPUs and
// 40,000 bound pods, a steady stream of pod events (a pending pod appears, is bound, an old one is
// deleted), and one node update (a relabel, a cordon) — each applied under the core's write lock,
// which is what the numbers measure.
#include <deque>

#include <benchmark/benchmark.h>

#include "fracpack/server/extender.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "support/kube_payloads.hpp"

namespace fracpack::bench {
namespace {

using nlohmann::json;

constexpr int kNodes = 5000;
constexpr int kGpus = 8;

std::string node_name(int n) { return fmt::format("gpu-{:05}", n); }

json node(int n) {
  json o = test::kube_node(node_name(n), kGpus, "81559");
  o["metadata"]["resourceVersion"] = "1";
  return o;
}

/// A fractional pod of queue-less kind, pending, or bound to GPU `g` of node `n`.
json pod(const std::string& name, int n = -1, int g = 0) {
  json o = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"namespace", "team-a"},
              {"uid", "uid-" + name},
              {"resourceVersion", "2"},
              {"annotations", {{"nvidia.com/container.main.gpu-memory.request", "20Gi"}}}}},
            {"spec",
             {{"schedulerName", "kai-scheduler"},
              {"containers", json::array({{{"name", "main"}, {"image", "x"}, {"resources", {{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}}}})}}},
            {"status", {{"phase", n < 0 ? "Pending" : "Running"}}}};
  if (n >= 0) {
    o["spec"]["nodeName"] = node_name(n);
    o["metadata"]["annotations"]["nvidia.com/container.main.gpus.devices"] = std::to_string(g);
  }
  return o;
}

std::unique_ptr<Extender> listed_core(std::size_t pods_per_gpu) {
  ExtenderOptions options;
  options.watching = true;
  auto core = std::move(Extender::open(options).value());
  std::vector<json> nodes;
  for (int n = 0; n < kNodes; ++n) nodes.push_back(node(n));
  std::vector<json> pods;
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) {
      for (std::size_t k = 0; k < pods_per_gpu; ++k) pods.push_back(pod(fmt::format("p-{}-{}-{}", n, g, k), n, g));
    }
  }
  core->watch_listed("Node", nodes, nullptr);
  core->watch_listed("Pod", pods, nullptr);
  return core;
}

void BM_InitialList(benchmark::State& state) {
  std::vector<json> nodes;
  for (int n = 0; n < kNodes; ++n) nodes.push_back(node(n));
  std::vector<json> pods;
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) pods.push_back(pod(fmt::format("p-{}-{}", n, g), n, g));
  }
  for (auto _ : state) {
    state.PauseTiming();
    ExtenderOptions options;
    options.watching = true;
    auto core = std::move(Extender::open(options).value());
    state.ResumeTiming();
    core->watch_listed("Node", nodes, nullptr);
    core->watch_listed("Pod", pods, nullptr);
    state.PauseTiming();
    if (core->snapshot().bindings.size() != pods.size()) state.SkipWithError("not every pod is held");
    core.reset();
    state.ResumeTiming();
  }
  state.counters["nodes"] = kNodes;
  state.counters["pods"] = static_cast<double>(pods.size());
}

/// Each batch: 100 pods appear pending, are bound, and 100 older ones are deleted (300 events).
void BM_PodEvents(benchmark::State& state) {
  auto core = listed_core(1);
  std::deque<std::pair<std::string, std::pair<int, int>>> live;  // pods added by the stream, oldest first
  int serial = 0;
  std::int64_t events = 0;
  const int batch = 100;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<ApiEvent> added;
    std::vector<ApiEvent> bound;
    std::vector<ApiEvent> deleted;
    for (int i = 0; i < batch; ++i, ++serial) {
      const std::string name = fmt::format("s-{}", serial);
      const int n = serial % kNodes;
      const int g = (serial / kNodes) % kGpus;
      added.push_back({ApiEvent::Type::kAdded, pod(name)});
      bound.push_back({ApiEvent::Type::kModified, pod(name, n, g)});
      live.push_back({name, {n, g}});
    }
    while (live.size() > 2000) {
      deleted.push_back({ApiEvent::Type::kDeleted, pod(live.front().first, live.front().second.first, live.front().second.second)});
      live.pop_front();
    }
    state.ResumeTiming();
    core->watch_changed("Pod", added, nullptr);
    core->watch_changed("Pod", bound, nullptr);
    core->watch_changed("Pod", deleted, nullptr);
    events += static_cast<std::int64_t>(added.size() + bound.size() + deleted.size());
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

/// One Node MODIFIED event that the scheduler sees (a label, then a cordon, alternating), on a
/// cluster holding 40,000 pods: the whole write-locked update.
void BM_NodeUpdate(benchmark::State& state) {
  auto core = listed_core(1);
  int serial = 0;
  for (auto _ : state) {
    state.PauseTiming();
    json o = node(serial % kNodes);
    o["metadata"]["labels"]["fracpack.io/bench"] = std::to_string(serial);
    if (serial % 2 == 1) o["spec"]["unschedulable"] = true;
    ++serial;
    std::vector<ApiEvent> one{{ApiEvent::Type::kModified, std::move(o)}};
    state.ResumeTiming();
    core->watch_changed("Node", one, nullptr);
  }
}

/// Fair shares recomputed after every change (eager) or before the next read that needs them
/// (lazy, what SchedulingState does): 5,000 nodes, 40,000 bound pods in 20 queues, then pods that
/// appear pending, are bound and go, one event at a time.
void BM_FairShares(benchmark::State& state, bool eager) {
  SchedulingState s(SchedulingState::Options{});
  ObjectChange objects;
  for (int n = 0; n < kNodes; ++n) objects.nodes.push_back(*k8s::decode_node(node(n), DecodeConfig{}));
  for (int q = 0; q < 20; ++q) {
    json queue = {{"kind", "Queue"},
                  {"metadata", {{"name", fmt::format("q{}", q)}}},
                  {"spec", {{"resources", {{"gpu", {{"quota", 100}, {"limit", -1}, {"overQuotaWeight", 1 + q % 3}}}}}}}};
    objects.queues.push_back(*queues::decode_queue(queue));
  }
  (void)s.apply(objects);
  auto in_queue = [](json o, int q) {
    o["metadata"]["labels"]["kai.scheduler/queue"] = fmt::format("q{}", q);
    return *k8s::decode_pod(o, DecodeConfig{}, PriorityClasses{});
  };
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) (void)s.observe(in_queue(pod(fmt::format("p-{}-{}", n, g), n, g), (n + g) % 20));
  }
  int serial = 0;
  std::int64_t events = 0;
  for (auto _ : state) {
    const std::string name = fmt::format("s-{}", serial);
    const int q = serial % 20;
    const PodRequest pending = in_queue(pod(name), q);
    (void)s.observe(pending);
    if (eager) benchmark::DoNotOptimize(s.book());
    (void)s.forget(pending.key());
    if (eager) benchmark::DoNotOptimize(s.book());
    ++serial;
    events += 2;
  }
  benchmark::DoNotOptimize(s.book());  // lazy: once, when read
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_FairShares, lazy, false)->Unit(benchmark::kMicrosecond)->Iterations(5000);
BENCHMARK_CAPTURE(BM_FairShares, eager, true)->Unit(benchmark::kMicrosecond)->Iterations(5000);
BENCHMARK(BM_InitialList)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PodEvents)->Unit(benchmark::kMicrosecond)->Iterations(200);
BENCHMARK(BM_NodeUpdate)->Unit(benchmark::kMicrosecond)->Iterations(2000);

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
