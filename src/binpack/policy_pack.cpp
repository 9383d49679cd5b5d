#include "binpack/policy_pack.hpp"

#include <algorithm>

namespace fracpack::binpack {
namespace {


bool shares(const PodTraits& pod) { return pod.hold == GpuHold::kFraction || pod.hold == GpuHold::kSlot; }

class PackPolicy final : public Policy {
 public:
  std::string_view name() const override { return "pack"; }
  std::string_view summary() const override {
    return "KAI default: fill the fullest shared GPU, then the node with the least free GPU capacity";
  }

  std::int64_t gpu_rank(const PodTraits& /*pod*/, const GpuCandidate& gpu) const override {
    if (!gpu.shared) return 2 * kPpm;  // idle GPUs after every shared one
    return kPpm - gpu.used.count() * kPpm / std::max<std::int64_t>(1, gpu.memory.count());
  }

  NodeKey node_key(const PodTraits& pod, const NodeSummary& node, const GpuChoice& choice) const override {
    NodeKey key;
    key.tier = shares(pod) && choice.shared_before == 0 ? 1 : 0;
    key.value = pod.hold == GpuHold::kNone ? node.free_cpu : node.free_milli;
    return key;
  }

  NodeKey key_lower_bound(const PodTraits& pod, const SummaryRange& range) const override {
    NodeKey key;
    key.position = range.lo.position;
    const NodeSummary& lo = range.lo;
    switch (pod.hold) {
      case GpuHold::kNone:
        key.value = lo.free_cpu;
        break;
      case GpuHold::kSlot:
        key.value = lo.free_milli;
        break;
      case GpuHold::kWhole:  // only nodes with enough idle GPUs count
        key.value = lo.free_if_idle[static_cast<std::size_t>(idle_class_of(pod.devices))];
        break;
      case GpuHold::kFraction: {
        // Tier 0 among nodes with a shared GPU of the pod's mode that has room; else tier 1 among
        // nodes with an idle GPU that has room. Classes are supersets, so the bound holds.
        const auto j = static_cast<std::size_t>(std::max(0, memory_class_of(pod.min_need.count())));
        const std::int64_t shared = lo.free_if_shared_memory[static_cast<std::size_t>(pod.mode)][j];
        if (shared != NodeSummary::kNone &&
            range.hi.max_shared_free[static_cast<std::size_t>(pod.mode)] >= pod.min_need.count()) {
          key.value = shared;
        } else {
          key.tier = 1;
          key.value = lo.free_if_idle_memory[j];
        }
        break;
      }
    }
    return key;
  }
};

}  // namespace

std::shared_ptr<const Policy> make_pack_policy() { return std::make_shared<PackPolicy>(); }

}  // namespace fracpack::binpack
