#include "binpack/fgd_core.hpp"

#include <algorithm>

namespace fracpack::binpack {

double fragmentation_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus,
                              const std::vector<TypicalPod>& workload) {
  NodeFree after = before;
  after.cpu -= pod.cpu;
  for (int g : gpus) {
    auto& f = after.gpu_milli[static_cast<std::size_t>(g)];
    f = std::max<std::int64_t>(0, f - pod.milli);
  }
  return fragmentation(before, workload) - fragmentation(after, workload);
}

double fragmentation_decrease_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                 const std::vector<int>& gpus, const std::vector<TypicalPod>& workload) {
  return fragmentation_decrease(node_free(state, n), study_pod(state, n, pod), gpus, workload);
}

}  // namespace fracpack::binpack
