// `study-best-fit`: the study's BestFit exactly as published (best_fit_score.go): score
// int(100 · (1 − ½·CPU left after/128 cores − ½·GPU left after/8 GPUs)), equal scores drawn at
// random. fracpack's own `best-fit` orders the same way without the truncation and breaks ties by
// the tightest GPU, then name.
#include "binpack/study_policies.hpp"
#include "binpack/study_policy.hpp"

namespace fracpack::binpack {
namespace {

class StudyBestFitPolicy final : public StudyPolicy {
 public:
  using StudyPolicy::StudyPolicy;
  std::string_view name() const override { return "study-best-fit"; }
  std::string_view summary() const override { return "FGD study baseline BestFit: least CPU and GPU left, truncated, ties by node order"; }

 protected:
  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>&) const override {
    const StudyPod p = study_pod(state, n, pod);
    const NodeFree free = node_free(state, n);
    const std::int64_t gpu_left = free.gpu_total();
    const double raw = 0.5 * static_cast<double>(free.cpu - p.cpu) / kStudyMaxCpu +
                       0.5 * static_cast<double>(gpu_left - p.total()) / kStudyMaxGpu;
    return static_cast<std::int64_t>((1.0 - raw) * 100.0);
  }
};

}  // namespace

std::shared_ptr<const Policy> make_study_best_fit_policy(std::uint64_t seed) {
  return std::make_shared<StudyBestFitPolicy>(seed);
}

}  // namespace fracpack::binpack
