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


std::int64_t sigmoid_score(double decrease) { return static_cast<std::int64_t>(100.0 / (1.0 + std::exp(-decrease / 1000.0))); }

std::optional<SharedGpu> fgd_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                        const PodTraits& traits, const TargetWorkload& workload) {
  return best_shared_gpu(state, n, pod, traits, workload, [](double decrease, std::int64_t) { return sigmoid_score(decrease); });
}

double cpu_per_milli(const std::vector<TypicalPod>& workload) {
  double cpu = 0;
  double milli = 0;
  for (const auto& t : workload) {
    if (t.gpus == 0) continue;
    cpu += t.weight * static_cast<double>(t.cpu.count());
    milli += t.weight * static_cast<double>(t.milli.count() * t.gpus);
  }
  return cpu > 0 && milli > 0 ? cpu / milli : 0;
}

double stranded(const NodeFree& node, double cpu_per_milli) {
  if (cpu_per_milli <= 0) return 0;
  const double feedable = static_cast<double>(std::max<std::int64_t>(0, node.cpu)) / cpu_per_milli;
  return std::max(0.0, static_cast<double>(node.gpu_total()) - feedable);
}

double fgd_cpu_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus, double cpu_per_milli,
                        double fgd_decrease) {
  const NodeFree after = after_placing(before, pod, gpus);
  return fgd_decrease + stranded(before, cpu_per_milli) - stranded(after, cpu_per_milli);
}

double fragmentation_decrease_at(const ClusterState& state, std::size_t n, const NodeFree& before, const StudyPod& pod,
                                 const std::vector<int>& gpus, const TargetWorkload& workload) {
  return workload.fragmentation_of(state, n, before) - workload.fragmentation(after_placing(before, pod, gpus));
}

double fragmentation_decrease_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                 const std::vector<int>& gpus, const TargetWorkload& workload) {
  return fragmentation_decrease_at(state, n, node_free(state, n), study_pod(state, n, pod), gpus, workload);
}

std::int64_t FgdCpuBase::fgd_cpu_score_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                          const std::vector<int>& gpus) const {
  const NodeFree before = node_free(state, n);
  const StudyPod p = study_pod(state, n, pod);
  return fgd_cpu_score(before, p, gpus, fragmentation_decrease_at(state, n, before, p, gpus, workload_));
}

}  // namespace fracpack::binpack
