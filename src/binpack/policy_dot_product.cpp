// `dot-product`: the study's DotProd, Tetris alignment (dot_product_score.go): the node whose free
// [CPU, GPU] vector has the smallest dot product with the pod's request, both normalised by the
// study's 128 cores and 8 GPUs; score int(100 · (1 − dot/2)).
#include "binpack/study_policies.hpp"
#include "binpack/study_policy.hpp"

namespace fracpack::binpack {
namespace {

class DotProductPolicy final : public StudyPolicy {
 public:
  using StudyPolicy::StudyPolicy;
  std::string_view name() const override { return "dot-product"; }
  std::string_view summary() const override { return "FGD study baseline: least aligned free CPU/GPU vector (Tetris)"; }

 protected:
  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>&) const override {
    const StudyPod p = study_pod(state, n, pod);
    const NodeFree free = node_free(state, n);
    const std::int64_t gpu_left = free.gpu_total();
    const double cpu = static_cast<double>(free.cpu) / kStudyMaxCpu * static_cast<double>(p.cpu) / kStudyMaxCpu;
    const double gpu = static_cast<double>(gpu_left) / kStudyMaxGpu * static_cast<double>(p.total()) / kStudyMaxGpu;
    return static_cast<std::int64_t>(100.0 * (1.0 - (cpu + gpu) / 2.0));
  }
};

}  // namespace

std::shared_ptr<const Policy> make_dot_product_policy(std::uint64_t seed) { return std::make_shared<DotProductPolicy>(seed); }

}  // namespace fracpack::binpack
