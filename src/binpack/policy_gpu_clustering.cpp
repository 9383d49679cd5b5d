// `gpu-clustering`: the study's GpuClustering (gpu_clustering_score.go): put a pod with nodes
// already running GPU pods of its own kind ("shared" or "k whole GPUs"): 75 when the node runs only
// that kind, 50 when that kind among others, 25 for a node without GPU pods, 0 otherwise; plus
// 25 · (8000 − free milli-GPU) / 8000. CPU-only pods score 0 everywhere.
#include <set>
#include <string>

#include "binpack/study_policies.hpp"
#include "binpack/study_policy.hpp"

namespace fracpack::binpack {
namespace {

/// A GPU pod's kind: -1 shared, k > 0 for k whole GPUs (slots count as shared).
int kind_of(const GpuChoice& c) { return c.hold == GpuHold::kWhole ? static_cast<int>(c.gpus.size()) : -1; }

class GpuClusteringPolicy final : public StudyPolicy {
 public:
  using StudyPolicy::StudyPolicy;
  std::string_view name() const override { return "gpu-clustering"; }
  std::string_view summary() const override { return "FGD study baseline: next to GPU pods of the same kind"; }

 protected:
  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>&) const override {
    const StudyPod p = study_pod(state, n, pod);
    if (p.gpus == 0) return 0;
    const int mine = p.shared() ? -1 : p.gpus;
    std::set<std::string> seen;
    std::set<int> kinds;
    std::int64_t gpu_left = 0;
    for (std::size_t g = 0; g < state.node(n).gpus.size(); ++g) {
      gpu_left += free_milli(state, n, g);
      for (const auto& holder : state.usage(n).gpus[g].holders) {
        if (!seen.insert(holder).second) continue;
        if (const Allocation* a = state.allocation(holder)) kinds.insert(kind_of(a->choice));
      }
    }
    std::int64_t base = 0;
    if (kinds.empty()) {
      base = 25;
    } else if (kinds.count(mine) != 0) {
      base = kinds.size() == 1 ? 75 : 50;
    }
    return base + 25 * (kStudyMaxGpu - gpu_left) / kStudyMaxGpu;
  }
};

}  // namespace

std::shared_ptr<const Policy> make_gpu_clustering_policy(std::uint64_t seed) {
  return std::make_shared<GpuClusteringPolicy>(seed);
}

}  // namespace fracpack::binpack
