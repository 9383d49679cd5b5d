#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "fracpack/sim/density.hpp"
#include "fracpack/binpack/scheduler.hpp"

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
  if (std::none_of(t.pods.begin(), t.pods.end(), [](const auto& p) { return p.num_gpu > 0; })) {
    return invalid_argument("{}: no pod asks for a GPU; density measures GPU allocation", pods_csv.string());
  }
  std::stable_sort(t.pods.begin(), t.pods.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::set<std::string> shapes;
  t.requests.reserve(t.pods.size());
  for (const auto& p : t.pods) {
    t.requests.push_back(trace::to_pod_request(p));
    shapes.insert(pod_shape(t.requests.back()));
  }
  t.shapes = shapes.size();
  t.typical = typical_pods(t.requests);
  return t;
}

std::vector<std::string> trace_warnings(const Trace& trace) {
  std::int64_t unplaceable = 0;
  std::int64_t unplaceable_milli = 0;
  std::int64_t demand = 0;
  for (const auto& p : trace.pods) {
    demand += p.gpu_total().count();
    const bool some_node = std::any_of(trace.nodes.begin(), trace.nodes.end(), [&](const NodeSpec& n) {
      const bool model_ok = p.gpu_spec.empty() || (!n.gpus.empty() && std::find(p.gpu_spec.begin(), p.gpu_spec.end(), n.gpu_product) !=
                                                                             p.gpu_spec.end());
      return model_ok && static_cast<int>(n.gpus.size()) >= p.num_gpu && n.cpu >= p.cpu && n.memory >= to_bytes(p.memory);
    });
    if (!some_node) {
      ++unplaceable;
      unplaceable_milli += p.gpu_total().count();
    }
  }
  std::vector<std::string> out;
  if (unplaceable > 0) {
    out.push_back(fmt::format("{} of {} pods ({:.1f} % of the list's GPU demand) fit no node even when it is empty "
                              "(GPU model, GPU count, CPU or memory); they always fail",
                              unplaceable, trace.pods.size(), demand > 0 ? 100.0 * static_cast<double>(unplaceable_milli) / static_cast<double>(demand) : 0.0));
  }
  return out;
}

}  // namespace fracpack::density
