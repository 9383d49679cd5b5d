// `random`: the study's Random (random_score.go): any feasible node, uniformly; a shared pod takes
// a uniformly drawn GPU among those with room.
#include "binpack/fit.hpp"
#include "binpack/study_policies.hpp"
#include "binpack/study_policy.hpp"

namespace fracpack::binpack {
namespace {

class RandomPolicy final : public StudyPolicy {
 public:
  using StudyPolicy::StudyPolicy;
  std::string_view name() const override { return "random"; }
  std::string_view summary() const override { return "FGD study baseline: a feasible node drawn at random"; }
  Ties ties() const override { return Ties::kPerPod; }  // every node scores 0: the draw decides

 protected:
  std::optional<std::vector<int>> choose(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                         const PodTraits& traits) const override {
    if (traits.hold != GpuHold::kFraction || traits.devices != 1) return study_best_gpus(state, n, pod, traits);
    std::vector<int> fitting;
    std::size_t holders = 0;
    for (std::size_t g = 0; g < state.node(n).gpus.size(); ++g) {
      holders += state.usage(n).gpus[g].holders.size();
      if (gpu_capacity_for(state, n, g, pod, traits) > 0) fitting.push_back(static_cast<int>(g));
    }
    if (fitting.empty()) return std::nullopt;
    // A draw that depends only on the node and its state, so equal states choose alike.
    const auto draw = static_cast<std::size_t>(tie_break(tie_seed(), std::to_string(holders), state.node(n).name));
    return std::vector<int>{fitting[draw % fitting.size()]};
  }
  std::int64_t score(const ClusterState&, std::size_t, const PodRequest&, const std::vector<int>&) const override { return 0; }
};

}  // namespace

std::shared_ptr<const Policy> make_random_policy(std::uint64_t seed) { return std::make_shared<RandomPolicy>(seed); }

}  // namespace fracpack::binpack
