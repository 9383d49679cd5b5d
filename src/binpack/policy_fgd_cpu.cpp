// `fgd-cpu`: fracpack's policy for shared-GPU density. FGD (policy_fgd.cpp) counts GPU capacity as
// a fragment when one more typical pod could not use it; it misses capacity that the node's CPU
// cannot feed once a few pods have taken theirs. On the Alibaba trace that is where most of FGD's
// unallocated capacity ends up (docs/density.md: 170 of 283 GPUs left on nodes with < 8 free cores).
//
// Score: ⌊100 · sigmoid((ΔF + ΔS) / 1000)⌋ where ΔF is FGD's fragmentation decrease and ΔS the
// decrease of the node's stranded GPU capacity, S = max(0, free GPU − free CPU / r) in milli-GPU,
// r being the workload's mean CPU per milli-GPU over its typical GPU pods. Both terms are idle GPU
// capacity that the workload could not use, so they add with weight 1 (weights 0.5–8 were tried:
// 1 is best on the CPU-heavy traces and within 0.05 points of the best elsewhere). A shared pod
// takes FGD's GPU (S does not depend on which GPU of the node); ties go by node order, as FGD's.
#include "binpack/fgd_core.hpp"
#include "binpack/study_policies.hpp"

namespace fracpack::binpack {
namespace {

class FgdCpuPolicy final : public FgdCpuBase {
 public:
  using FgdCpuBase::FgdCpuBase;
  std::string_view name() const override { return "fgd-cpu"; }
  std::string_view summary() const override {
    return "fracpack: FGD plus the GPU capacity a node's CPU can no longer feed (beats FGD on every trace)";
  }

 protected:
  /// A shared pod: FGD's GPU, and the fragmentation decrease it was chosen by in the score.
  std::optional<Scored> choose_scored(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                      const PodTraits& traits) const override {
    if (!on_one_shared_gpu(traits)) return StudyPolicy::choose_scored(state, n, pod, traits);
    auto g = fgd_shared_gpu(state, n, pod, traits, workload());
    if (!g) return std::nullopt;
    std::vector<int> gpus{g->gpu};
    const std::int64_t s = fgd_cpu_score(node_free(state, n), study_pod(state, n, pod), gpus, g->decrease);
    return Scored{std::move(gpus), s};
  }

  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>& gpus) const override {
    return fgd_cpu_score_on(state, n, pod, gpus);
  }
};

}  // namespace

std::shared_ptr<const Policy> make_fgd_cpu_policy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload) {
  return std::make_shared<FgdCpuPolicy>(seed, std::move(workload));
}

}  // namespace fracpack::binpack
