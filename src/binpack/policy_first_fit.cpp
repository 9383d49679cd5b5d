#include "binpack/policy_first_fit.hpp"

namespace fracpack::binpack {
namespace {

class FirstFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "first-fit"; }
  std::string_view summary() const override {
    return "the first node by name that fits, its lowest-index GPUs";
  }
  std::int64_t gpu_rank(const PodTraits&, const GpuCandidate&) const override { return 0; }
  NodeKey node_key(const PodTraits&, const NodeSummary&, const GpuChoice&) const override { return {}; }
  NodeKey key_lower_bound(const PodTraits&, const SummaryRange& range) const override {
    NodeKey key;
    key.position = range.lo.position;
    return key;
  }
};

}  // namespace

std::shared_ptr<const Policy> make_first_fit_policy() { return std::make_shared<FirstFitPolicy>(); }

}  // namespace fracpack::binpack
