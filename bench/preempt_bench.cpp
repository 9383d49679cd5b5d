// Preempt in-process (no transport), at issue 38's scale: 5,000 nodes × 8 GPUs full with 40,000
// running one-GPU pods of queue `borrower` (quota 1,000 GPUs, under `dept`), and a pending pod of
// `owner` (quota 39,000) that fits nowhere. kube-scheduler's DefaultPreemption offers its
// candidates: 10 % of the nodes (its minCandidateNodesPercentage), each with its 8 pods. What is
// timed is one Preempt answer; the ledger is not changed by it. Reports p50 / p99 in
// milliseconds. FRACPACK_BENCH_NODES and FRACPACK_BENCH_CANDIDATES change the scale.
#include <chrono>
#include <map>

#include <benchmark/benchmark.h>

#include "bench_stats.hpp"
#include "fracpack/server/extender.hpp"
#include "support/kube_payloads.hpp"

namespace fracpack::bench {
namespace {

using nlohmann::json;

json queue(const std::string& name, const std::string& parent, int gpus) {
  const json unlimited = {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  json spec = {{"resources", {{"gpu", {{"quota", gpus}, {"limit", -1}, {"overQuotaWeight", 1}}}, {"cpu", unlimited}, {"memory", unlimited}}}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  return {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
          {"spec", spec}};
}

json one_gpu_pod(const std::string& name, const std::string& queue_name, const std::string& priority_class, int priority) {
  json pod = test::kube_pod(name);
  pod["spec"]["priority"] = priority;
  pod["metadata"]["uid"] = "uid-" + name;
  pod["metadata"]["labels"]["kai.scheduler/queue"] = queue_name;
  pod["spec"]["priorityClassName"] = priority_class;
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1";
  return pod;
}

void BM_Preempt(benchmark::State& state) {
  const int nodes = env_int("FRACPACK_BENCH_NODES", 5000);
  const int offered_nodes = env_int("FRACPACK_BENCH_CANDIDATES", nodes / 10);
  std::unique_ptr<Extender> core = std::move(Extender::open(ExtenderOptions{}).value());
  std::vector<json> objects{queue("dept", "", 40000), queue("borrower", "dept", 1000), queue("owner", "dept", 39000)};
  for (int n = 0; n < nodes; ++n) objects.push_back(test::kube_node(fmt::format("gpu-{:05}", n), 8, "81559"));
  if (!core->apply(objects, nullptr).is_ok()) state.SkipWithError("apply");
  std::vector<json> running;
  std::map<std::string, std::vector<std::string>> offered;
  for (int n = 0; n < nodes; ++n) {
    const std::string node = fmt::format("gpu-{:05}", n);
    for (int g = 0; g < 8; ++g) {
      json pod = one_gpu_pod(fmt::format("b-{}-{}", n, g), "borrower", "train", 50);
      pod["spec"]["nodeName"] = node;
      pod["status"] = {{"phase", "Running"}, {"startTime", fmt::format("2026-01-01T{:02}:{:02}:00Z", g, n % 60)}};
      if (n < offered_nodes) offered[node].push_back(pod["metadata"]["uid"]);
      running.push_back(std::move(pod));
    }
  }
  std::vector<std::string> conflicts;
  if (!core->sync(running, false, &conflicts).is_ok()) state.SkipWithError("sync");
  const json pending = one_gpu_pod("wants", "owner", "build-preemptible", 75);
  if (auto f = core->filter(pending, {"gpu-00000"}); !f || !f->passed.empty()) state.SkipWithError("the pod should fit nowhere");
  std::vector<double> ms;
  std::size_t answered = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto answer = core->preempt(pending, offered);
    ms.push_back(micros(start, std::chrono::steady_clock::now()) / 1000);
    if (!answer) state.SkipWithError("preempt");
    answered = answer ? answer->size() : 0;
  }
  state.counters["p50_ms"] = percentile(ms, 0.50);
  state.counters["p99_ms"] = percentile(ms, 0.99);
  state.counters["nodes_answered"] = static_cast<double>(answered);
  if (answered == 0) state.SkipWithError("no victims: the scenario is wrong");
}

BENCHMARK(BM_Preempt)->Unit(benchmark::kMillisecond)->Iterations(200)->UseRealTime();

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
