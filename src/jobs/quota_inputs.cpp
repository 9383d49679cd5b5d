#include "quota_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/k8s/strict_fields.hpp"

namespace fracpack {
namespace {

Result<std::vector<NodeSpec>> read_nodes_any(const std::string& path) {
  std::vector<NodeSpec> out;
  if (std::filesystem::path(path).extension() == ".csv") {
    auto rows = trace::read_nodes(path);
    if (!rows) return rows.status();
    for (const auto& r : *rows) out.push_back(trace::to_node_spec(r));
    return out;
  }
  auto objects = k8s::read_objects_file(path);
  if (!objects) return objects.status();
  for (const auto& o : *objects) {
    if (k8s::kind_of(o) != "Node") continue;
    auto n = k8s::decode_node(o, DecodeConfig{});
    if (!n) return invalid_argument("--nodes {}: {}", path, n.status().message());
    out.push_back(std::move(*n));
  }
  if (out.empty()) return invalid_argument("--nodes {}: no Node objects", path);
  return out;
}

Result<quota::TimedWorkload> read_workload(const QuotaInputFiles& files) {
  if (std::filesystem::path(files.pods).extension() == ".csv") {  // the trace's pod list: queues from the rule file
    if (files.rules.empty()) return invalid_argument("--rules is required with a pod-list CSV (--pods {})", files.pods);
    auto rules = quota::read_rules(files.rules);
    if (!rules) return rules.status();
    auto pods = trace::read_pods(files.pods);
    if (!pods) return pods.status();
    return quota::timed_workload(*pods, *rules);
  }
  // Pod objects: queues from their labels, run times from an annotation.
  if (!files.rules.empty()) {
    return invalid_argument("--rules applies to a pod-list CSV; Pod objects name their queue with the kai.scheduler/queue label");
  }
  auto objects = k8s::read_objects_file(files.pods);
  if (!objects) return objects.status();
  return quota::timed_workload_from_objects(*objects, files.pods);
}

}  // namespace

Result<std::vector<NodeSpec>> sample_nodes(std::vector<NodeSpec> nodes, double fraction) {
  if (!(fraction > 0 && fraction <= 1)) return invalid_argument("--node-fraction {}: must be in (0, 1]", fraction);
  if (fraction == 1) return nodes;
  std::vector<NodeSpec> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (std::floor(static_cast<double>(i + 1) * fraction) > std::floor(static_cast<double>(i) * fraction)) out.push_back(std::move(nodes[i]));
  }
  if (out.empty()) return invalid_argument("--node-fraction {}: keeps none of the {} nodes", fraction, nodes.size());
  return out;
}

Result<QuotaInputs> read_quota_inputs(const QuotaInputFiles& files) {
  QuotaInputs in;
  auto nodes = read_nodes_any(files.nodes);
  if (!nodes) return nodes.status();
  auto sampled = sample_nodes(std::move(*nodes), files.node_fraction);
  if (!sampled) return sampled.status();
  in.nodes = std::move(*sampled);
  if (std::none_of(in.nodes.begin(), in.nodes.end(), [](const NodeSpec& n) { return !n.gpus.empty(); })) {
    return invalid_argument("--nodes {}: no node has a GPU{}; there is nothing to share", files.nodes,
                            files.node_fraction < 1 ? " (after --node-fraction)" : "");
  }
  auto objects = k8s::read_objects_file(files.queues);
  if (!objects) return objects.status();
  std::vector<std::string> queue_warnings;
  for (std::size_t i = 0; i < objects->size(); ++i) {
    nlohmann::json& o = (*objects)[i];
    if (k8s::kind_of(o) != "Queue") {  // a cluster file may hold Nodes too; a misspelt KAI kind is an error
      if (auto s = k8s::check_foreign_kind(o, k8s::describe(o, i)); !s.is_ok()) {
        return invalid_argument("--queues {}: {}", files.queues, s.message());
      }
      continue;
    }
    auto q = queues::decode_queue(o, &queue_warnings);
    if (!q) return invalid_argument("--queues {}: {}", files.queues, q.status().message());
    in.queues.push_back(std::move(*q));
    in.queue_objects.push_back(std::move(o));
  }
  if (in.queues.empty()) return invalid_argument("--queues {}: no Queue objects", files.queues);
  auto workload = read_workload(files);
  if (!workload) return workload.status();
  if (workload->pods.empty()) return invalid_argument("--pods {}: no pods", files.pods);
  in.workload = std::move(*workload);
  in.warnings = in.workload.warnings;
  for (auto& w : queue_warnings) in.warnings.push_back(std::move(w));
  for (auto& w : quota_warnings(in.nodes, in.queues)) in.warnings.push_back(std::move(w));
  return in;
}

}  // namespace fracpack
