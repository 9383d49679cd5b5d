// The fragmentation arithmetic FGD and its refinements share. Internal to src/binpack/.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "binpack/study_policy.hpp"
#include "fracpack/binpack/fragmentation.hpp"

namespace fracpack::binpack {

/// The node after the pod takes its CPU and its share of each of `gpus` (free shares floor at 0).
NodeFree after_placing(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus);

/// F(node) − F(node after the pod takes `gpus` and its CPU), in milli-GPU: how much the placement
/// lowers (positive) or raises (negative) the node's fragmentation for the workload.
double fragmentation_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus,
                              const std::vector<TypicalPod>& workload);

/// For a pod on one shared GPU: each GPU with room (the ledger's fit), scored by
/// `rank(decrease, free)` — its fragmentation decrease and its free share (milli-GPU) before the
/// pod; the best (ties: lowest index). nullopt when no GPU has room.
template <class Rank>
std::optional<int> best_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                                   const std::vector<TypicalPod>& workload, Rank&& rank);

/// FGD's node score: ⌊100 · sigmoid(decrease / 1000)⌋ (fgd_score.go). The truncation makes many
/// ties, broken by node order; exact decreases did worse (docs/density.md).
std::int64_t sigmoid_score(double decrease);

/// FGD's GPUs on node `n`: for a pod on one shared GPU, the GPU with the best sigmoid_score() of
/// its fragmentation decrease (ties: lowest index); otherwise study_best_gpus().
std::optional<std::vector<int>> fgd_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                                         const std::vector<TypicalPod>& workload);

/// The workload's mean milli-CPU per milli-GPU over its GPU pods, weighted by popularity (0: none).
double cpu_per_milli(const std::vector<TypicalPod>& workload);

/// GPU capacity (milli) of `node` that its free CPU cannot feed at `cpu_per_milli` (fgd-cpu's S).
double stranded(const NodeFree& node, double cpu_per_milli);

/// fgd-cpu's measure of `pod` taking `gpus` of a node with `before` free: FGD's fragmentation
/// decrease plus the decrease of stranded() GPU capacity, in milli-GPU (positive: wastes less).
double fgd_cpu_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus,
                        const std::vector<TypicalPod>& workload, double cpu_per_milli);

/// The base of fgd-cpu and its refinements: the target workload, its CPU per milli-GPU, and
/// fgd-cpu's node score ⌊100 · sigmoid(fgd_cpu_decrease / 1000)⌋.
class FgdCpuBase : public StudyPolicy {
 public:
  FgdCpuBase(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload)
      : StudyPolicy(seed), workload_(std::move(workload)), cpu_per_milli_(cpu_per_milli(*workload_)) {}

 protected:
  [[nodiscard]] std::int64_t fgd_cpu_score(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus) const {
    return sigmoid_score(fgd_cpu_decrease(before, pod, gpus, *workload_, cpu_per_milli_));
  }
  [[nodiscard]] const std::vector<TypicalPod>& workload() const { return *workload_; }

 private:
  std::shared_ptr<const std::vector<TypicalPod>> workload_;
  double cpu_per_milli_;
};

/// fragmentation_decrease() of the pod taking `gpus` on node `n` of the ledger.
double fragmentation_decrease_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                 const std::vector<int>& gpus, const std::vector<TypicalPod>& workload);

}  // namespace fracpack::binpack

#include "binpack/fit.hpp"

namespace fracpack::binpack {

template <class Rank>
std::optional<int> best_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                                   const std::vector<TypicalPod>& workload, Rank&& rank) {
  const NodeFree free = node_free(state, n);
  const StudyPod p = study_pod(state, n, pod);
  const double before = fragmentation(free, workload);  // the same for every GPU tried
  std::optional<int> best;
  decltype(rank(0.0, std::int64_t{0})) best_rank{};
  for (std::size_t g = 0; g < free.gpu_milli.size(); ++g) {
    if (gpu_capacity_for(state, n, g, pod, traits) <= 0) continue;
    const double decrease = before - fragmentation(after_placing(free, p, {static_cast<int>(g)}), workload);
    const auto r = rank(decrease, free.gpu_milli[g]);
    if (!best || r > best_rank) {
      best = static_cast<int>(g);
      best_rank = r;
    }
  }
  return best;
}

}  // namespace fracpack::binpack
