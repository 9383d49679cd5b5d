#include "binpack/fgd_core.hpp"

#include <algorithm>
#include <cmath>

namespace fracpack::binpack {

NodeFree after_placing(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus) {
  NodeFree after = before;
  after.cpu -= pod.cpu;
  for (int g : gpus) {
    auto& f = after.gpu_milli[static_cast<std::size_t>(g)];
    f = std::max<std::int64_t>(0, f - pod.milli);
  }
  return after;
}

double fragmentation_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus,
                              const std::vector<TypicalPod>& workload) {
  return fragmentation(before, workload) - fragmentation(after_placing(before, pod, gpus), workload);
}

std::int64_t sigmoid_score(double decrease) { return static_cast<std::int64_t>(100.0 / (1.0 + std::exp(-decrease / 1000.0))); }

std::optional<std::vector<int>> fgd_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                                         const std::vector<TypicalPod>& workload) {
  if (traits.hold != GpuHold::kFraction || traits.devices != 1) return study_best_gpus(state, n, pod, traits);
  auto g = best_shared_gpu(state, n, pod, traits, workload, sigmoid_score);
  if (!g) return std::nullopt;
  return std::vector<int>{*g};
}

double fragmentation_decrease_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                 const std::vector<int>& gpus, const std::vector<TypicalPod>& workload) {
  return fragmentation_decrease(node_free(state, n), study_pod(state, n, pod), gpus, workload);
}

}  // namespace fracpack::binpack
