// LedgerSnapshot → the JSON that GET /snapshot serves (extender.hpp).
#include "fracpack/server/extender.hpp"

namespace fracpack {

nlohmann::json to_json(const LedgerSnapshot& snapshot) {
  using nlohmann::json;
  json nodes = json::array();
  for (const auto& n : snapshot.nodes) {
    json gpus = json::array();
    for (const auto& g : n.gpus) {
      gpus.push_back({{"index", g.index},
                      {"state", gpu_state_name(g.state)},
                      {"memoryMiB", g.memory.count()},
                      {"usedMiB", g.used.count()},
                      {"fenced", g.fenced},
                      {"holders", g.holders}});
      if (!g.reservation.empty()) {
        gpus.back()["reservation"] = g.reservation;
        gpus.back()["device"] = g.device;
      }
    }
    nodes.push_back({{"name", n.name}, {"gpus", std::move(gpus)}});
  }
  json bindings = json::array();
  for (const auto& b : snapshot.bindings) {
    bindings.push_back({{"pod", b.pod},
                        {"uid", b.uid},
                        {"node", b.node},
                        {"gpus", b.gpus},
                        {"standing", b.standing},
                        {"note", b.note},
                        {"ours", b.ours},
                        {"gpusGuessed", b.gpus_guessed},
                        {"assumed", b.assumed}});
  }
  json queues = json::array();
  for (const auto& q : snapshot.queues) {
    queues.push_back({{"name", q.name},
                      {"gpuAllocated", q.gpu_allocated},
                      {"gpuAllocatedNonPreemptible", q.gpu_allocated_non_preemptible},
                      {"gpuFairShare", q.gpu_fair_share}});
  }
  return {{"nodes", std::move(nodes)}, {"bindings", std::move(bindings)}, {"queues", std::move(queues)}};
}

}  // namespace fracpack
