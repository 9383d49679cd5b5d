#include "binpack/policy_best_fit.hpp"

#include <algorithm>

namespace fracpack::binpack {
namespace {

/// ½·free CPU + ½·free GPU, each in millionths of the largest node (fixed point, overflow-safe).
std::int64_t weighted(const PodTraits& pod, std::int64_t free_cpu, std::int64_t free_milli) {
  return (ppm(free_cpu, pod.max_node_cpu) + ppm(free_milli, pod.max_node_gpu_milli)) / 2;
}

class BestFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "best-fit"; }
  std::string_view summary() const override {
    return "the node left with the least CPU and GPU (reference study BestFit), then the tightest GPU";
  }

  std::int64_t gpu_rank(const PodTraits& /*pod*/, const GpuCandidate& gpu) const override {
    return (gpu.usable - gpu.used - gpu.need).count();
  }

  NodeKey node_key(const PodTraits& pod, const NodeSummary& node, const GpuChoice& choice) const override {
    NodeKey key;
    key.value = weighted(pod, node.free_cpu, node.free_milli);
    key.value2 = choice.free_after.count();
    return key;
  }

  NodeKey key_lower_bound(const PodTraits& pod, const SummaryRange& range) const override {
    const NodeSummary& lo = range.lo;
    std::int64_t gpu = lo.free_milli;
    if (pod.hold == GpuHold::kWhole) {
      gpu = lo.free_if_idle[static_cast<std::size_t>(idle_class_of(pod.devices))];
    } else if (pod.hold == GpuHold::kFraction) {
      const auto j = static_cast<std::size_t>(std::max(0, memory_class_of(pod.min_need.count())));
      gpu = std::min(lo.free_if_shared_memory[static_cast<std::size_t>(pod.mode)][j], lo.free_if_idle_memory[j]);
    }
    NodeKey key;
    key.value = gpu == NodeSummary::kNone ? NodeSummary::kNone : weighted(pod, lo.free_cpu, gpu);
    key.position = lo.position;
    return key;
  }
};

}  // namespace

std::shared_ptr<const Policy> make_best_fit_policy() { return std::make_shared<BestFitPolicy>(); }

}  // namespace fracpack::binpack
