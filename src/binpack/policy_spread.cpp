#include "binpack/policy_spread.hpp"

namespace fracpack::binpack {
namespace {


class SpreadPolicy final : public Policy {
 public:
  std::string_view name() const override { return "spread"; }
  std::string_view summary() const override {
    return "KAI spread: an idle GPU first, then the node with the largest free share of its GPUs";
  }

  std::int64_t gpu_rank(const PodTraits& /*pod*/, const GpuCandidate& gpu) const override {
    if (!gpu.shared) return 0;
    return 1 + gpu.used.count() * kPpm / std::max<std::int64_t>(1, gpu.memory.count());
  }

  NodeKey node_key(const PodTraits& pod, const NodeSummary& node, const GpuChoice& /*choice*/) const override {
    NodeKey key;
    key.value = -(pod.hold == GpuHold::kNone ? node.cpu_ratio_ppm : node.free_ratio_ppm);
    return key;
  }

  NodeKey key_lower_bound(const PodTraits& pod, const SummaryRange& range) const override {
    NodeKey key;
    key.value = -(pod.hold == GpuHold::kNone ? range.hi.cpu_ratio_ppm : range.hi.free_ratio_ppm);
    key.position = range.lo.position;
    return key;
  }
};

}  // namespace

std::shared_ptr<const Policy> make_spread_policy() { return std::make_shared<SpreadPolicy>(); }

}  // namespace fracpack::binpack
