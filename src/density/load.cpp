#include <algorithm>

#include "fracpack/density.hpp"

namespace fracpack::density {

Result<Trace> load_trace(const std::filesystem::path& nodes_csv, const std::filesystem::path& pods_csv) {
  auto nodes = trace::read_nodes(nodes_csv);
  if (!nodes) return nodes.status();
  auto pods = trace::read_pods(pods_csv);
  if (!pods) return pods.status();
  Trace t;
  t.workload = pods_csv.stem().string();
  for (const auto& n : *nodes) {
    t.gpus += n.gpus;
    t.nodes.push_back(trace::to_node_spec(n));
  }
  if (t.gpus == 0) return invalid_argument("{}: no node has a GPU; a density run needs GPU capacity", nodes_csv.string());
  t.pods = std::move(*pods);
  if (t.pods.empty()) return invalid_argument("{}: no pods", pods_csv.string());
  std::stable_sort(t.pods.begin(), t.pods.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<PodRequest> requests;
  requests.reserve(t.pods.size());
  for (const auto& p : t.pods) requests.push_back(trace::to_pod_request(p));
  t.typical = typical_pods(requests);
  return t;
}

}  // namespace fracpack::density
