// The fragmentation arithmetic FGD and its refinements share. Internal to src/binpack/.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "binpack/study_policy.hpp"
#include "binpack/target_workload.hpp"
#include "fracpack/binpack/fragmentation.hpp"

namespace fracpack::binpack {

/// The node after the pod takes its CPU and its share of each of `gpus` (free shares floor at 0).
NodeFree after_placing(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus);

/// Whether the pod takes a share of one GPU: the case where FGD's policies choose the GPU by
/// fragmentation (others take study_best_gpus()).
inline bool on_one_shared_gpu(const PodTraits& traits) { return traits.hold == GpuHold::kFraction && traits.devices == 1; }

/// The GPU a shared pod takes, and fragmentation_decrease_at() of taking it.
struct SharedGpu {
  int gpu = 0;
  double decrease = 0;
};

/// For a pod on one shared GPU: each GPU with room (the ledger's fit), scored by
/// `rank(decrease, free)` — its fragmentation decrease and its free share (milli-GPU) before the
/// pod; the best (ties: lowest index). nullopt when no GPU has room.
template <class Rank>
std::optional<SharedGpu> best_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                         const PodTraits& traits, const TargetWorkload& workload, Rank&& rank);

/// FGD's node score: ⌊100 · sigmoid(decrease / 1000)⌋ (fgd_score.go). The truncation makes many
/// ties, broken by node order; exact decreases did worse (docs/density.md).
std::int64_t sigmoid_score(double decrease);

/// FGD's GPU for a pod on one shared GPU: the best sigmoid_score() of its fragmentation decrease
/// (ties: lowest index).
std::optional<SharedGpu> fgd_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                        const PodTraits& traits, const TargetWorkload& workload);

/// The workload's mean milli-CPU per milli-GPU over its GPU pods, weighted by popularity (0: none).
double cpu_per_milli(const std::vector<TypicalPod>& workload);

/// GPU capacity (milli) of `node` that its free CPU cannot feed at `cpu_per_milli` (fgd-cpu's S).
double stranded(const NodeFree& node, double cpu_per_milli);

/// fgd-cpu's measure of `pod` taking `gpus` of a node with `before` free: FGD's fragmentation
/// decrease `fgd_decrease` (fragmentation_decrease_at()) plus the decrease of stranded() GPU
/// capacity, in milli-GPU (positive: wastes less).
double fgd_cpu_decrease(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus, double cpu_per_milli,
                        double fgd_decrease);

/// The base of fgd-cpu and its refinements: the target workload, its CPU per milli-GPU, and
/// fgd-cpu's node score ⌊100 · sigmoid(fgd_cpu_decrease / 1000)⌋.
class FgdCpuBase : public StudyPolicy {
 public:
  FgdCpuBase(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload)
      : StudyPolicy(seed), cpu_per_milli_(cpu_per_milli(*workload)), workload_(std::move(workload)) {}

 protected:
  [[nodiscard]] std::int64_t fgd_cpu_score(const NodeFree& before, const StudyPod& pod, const std::vector<int>& gpus,
                                           double fgd_decrease) const {
    return sigmoid_score(fgd_cpu_decrease(before, pod, gpus, cpu_per_milli_, fgd_decrease));
  }
  /// fgd_cpu_score() of `pod` taking `gpus` on node `n`, with the node's fragmentation before it
  /// from the workload's memory.
  [[nodiscard]] std::int64_t fgd_cpu_score_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                              const std::vector<int>& gpus) const;
  [[nodiscard]] const TargetWorkload& workload() const { return workload_; }

 private:
  double cpu_per_milli_;
  TargetWorkload workload_;
};

/// F(node) − F(node after `pod` takes `gpus` and its CPU), in milli-GPU, for node `n` whose free
/// capacity is `before`: how much the placement lowers (positive) or raises (negative) the node's
/// fragmentation for the workload. F(node) comes from the workload's memory.
double fragmentation_decrease_at(const ClusterState& state, std::size_t n, const NodeFree& before, const StudyPod& pod,
                                 const std::vector<int>& gpus, const TargetWorkload& workload);
/// The same for the pod as the ledger has node `n` now.
double fragmentation_decrease_on(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                 const std::vector<int>& gpus, const TargetWorkload& workload);

}  // namespace fracpack::binpack

#include "binpack/fit.hpp"

namespace fracpack::binpack {

template <class Rank>
std::optional<SharedGpu> best_shared_gpu(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                         const PodTraits& traits, const TargetWorkload& workload, Rank&& rank) {
  const NodeFree free = node_free(state, n);
  const StudyPod p = study_pod(state, n, pod);
  const double before = workload.fragmentation_of(state, n, free);  // the same for every GPU tried
  std::optional<SharedGpu> best;
  decltype(rank(0.0, std::int64_t{0})) best_rank{};
  NodeFree after = after_placing(free, p, {});  // the pod's CPU taken; each GPU tried in turn below
  // Fragmentation counts a node's free shares, not which GPU holds which: GPUs with the same free
  // share give the same node after the pod (an idle node's eight GPUs are measured once).
  std::vector<std::pair<std::int64_t, double>> measured;  // free share before → decrease
  for (std::size_t g = 0; g < free.gpu_milli.size(); ++g) {
    if (gpu_capacity_for(state, n, g, pod, traits) <= 0) continue;
    const std::int64_t share = free.gpu_milli[g];
    auto known = std::find_if(measured.begin(), measured.end(), [&](const auto& m) { return m.first == share; });
    if (known == measured.end()) {
      after.gpu_milli[g] = std::max<std::int64_t>(0, share - p.milli);  // after_placing(free, p, {g})
      known = measured.emplace(measured.end(), share, before - workload.fragmentation(after));
      after.gpu_milli[g] = share;
    }
    const double decrease = known->second;
    const auto r = rank(decrease, share);
    if (!best || r > best_rank) {
      best = SharedGpu{static_cast<int>(g), decrease};
      best_rank = r;
    }
  }
  return best;
}

}  // namespace fracpack::binpack
