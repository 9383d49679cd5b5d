// `fgd`: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23, §4; fgd_score.go): place the
// pod where the node's fragmentation for the target workload grows least. Score
// int(100 · sigmoid((F_before − F_after) / 1000)) with F in milli-GPU; a shared pod tries each GPU
// with room and takes the best (ties: lowest index); whole GPUs take the lowest-index idle ones.
#include "binpack/fgd_core.hpp"
#include "binpack/study_policies.hpp"

namespace fracpack::binpack {
namespace {

class FgdPolicy final : public StudyPolicy {
 public:
  FgdPolicy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload)
      : StudyPolicy(seed), workload_(std::move(workload)) {}
  std::string_view name() const override { return "fgd"; }
  std::string_view summary() const override { return "FGD: the node whose fragmentation for the typical workload grows least"; }

 protected:
  /// A shared pod's score is the sigmoid of the decrease its GPU was chosen by: measured once.
  std::optional<Scored> choose_scored(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                      const PodTraits& traits) const override {
    if (!on_one_shared_gpu(traits)) return StudyPolicy::choose_scored(state, n, pod, traits);
    auto g = fgd_shared_gpu(state, n, pod, traits, workload_);
    if (!g) return std::nullopt;
    return Scored{{g->gpu}, sigmoid_score(g->decrease)};
  }

  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>& gpus) const override {
    return sigmoid_score(fragmentation_decrease_on(state, n, pod, gpus, workload_));
  }

 private:
  TargetWorkload workload_;
};

}  // namespace

std::shared_ptr<const Policy> make_fgd_policy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload) {
  return std::make_shared<FgdPolicy>(seed, std::move(workload));
}

}  // namespace fracpack::binpack
