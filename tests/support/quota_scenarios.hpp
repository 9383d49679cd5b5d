// Small replay scenarios for the queue replay and tuner tests: Queues with a GPU quota, whole-GPU
// pods with arrival and run time.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/sim/quota/workload.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {

/// A Queue (decoded from its object) with a GPU quota and weight, no limits; CPU and memory unlimited.
inline queues::QueueSpec gpu_queue(const std::string& name, double quota, double weight = 1) {
  json unlimited = {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  json q = {{"apiVersion", "scheduling.run.ai/v2"},
            {"kind", "Queue"},
            {"metadata", {{"name", name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
            {"spec",
             {{"resources",
               {{"gpu", {{"quota", quota}, {"limit", -1}, {"overQuotaWeight", weight}}}, {"cpu", unlimited}, {"memory", unlimited}}}}}};
  auto spec = queues::decode_queue(q);
  REQUIRE_MESSAGE(spec.is_ok(), spec.status().message());
  return *spec;
}

/// A pod of `gpus` whole GPUs in `queue`, arriving at `arrival` and running `run` seconds (nullopt: to the end).
inline quota::TimedPod whole_gpu(const std::string& name, const std::string& queue, std::int64_t arrival, std::optional<std::int64_t> run,
                                 int gpus = 1) {
  quota::TimedPod t;
  t.pod = PodBuilder(name).whole(gpus).spec();
  t.pod.queue = queue;
  t.arrival = arrival;
  t.run_seconds = run;
  return t;
}

/// Makes a pod KAI's "inference": priority 125, non-preemptible (it may not go over its queue's quota).
inline quota::TimedPod non_preemptible(quota::TimedPod t) {
  t.pod.preemptible = false;
  t.pod.priority = 125;
  return t;
}

/// One node of `gpus` GPUs of 20000 MiB.
inline std::vector<NodeSpec> one_node(int gpus) {
  std::vector<NodeSpec> nodes;
  nodes.push_back(nvf("n", gpus, 20000).spec());
  return nodes;
}

/// A pod list CSV (the trace's header) with `rows`.
inline std::filesystem::path trace_pods(const std::string& name, const std::string& rows) {
  return temp_file(name, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
                             rows);
}

/// The files of a two-queue command test: one T4 node of `gpus` GPUs, pods from `pod_rows`, rules
/// sending LS pods to queue a (non-preemptible) and BE pods to b, and Queues a and b with GPU quotas.
struct QuotaFiles {
  std::filesystem::path nodes, pods, rules, queues;
};

inline QuotaFiles quota_files(const std::string& prefix, int gpus, const std::string& pod_rows, double quota_a, double quota_b) {
  constexpr const char* kQueue = R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {{name: {}}}
spec: {{resources: {{gpu: {{quota: {}, limit: -1, overQuotaWeight: 1}}, cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}, memory: {{quota: -1, limit: -1, overQuotaWeight: 1}}}}}}
)";
  QuotaFiles f;
  f.nodes = temp_file(prefix + "-nodes.csv", fmt::format("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,{},T4\n", gpus));
  f.pods = trace_pods(prefix + "-pods.csv", pod_rows);
  f.rules = temp_file(prefix + "-rules.yaml", "rules: [{qos: LS, queue: a, preemptible: false}, {qos: BE, queue: b}]");
  f.queues = temp_file(prefix + "-queues.yaml", fmt::format(kQueue, "a", quota_a) + "---\n" + fmt::format(kQueue, "b", quota_b));
  return f;
}

}  // namespace fracpack::test
