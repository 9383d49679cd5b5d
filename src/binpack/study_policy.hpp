// The base of the FGD study's node scorers (Weng et al., USENIX ATC'23; their simulator
// hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go), reproduced so
// their published results can be checked with our ledger. Internal to src/binpack/.
//
// Every study policy is a kube-scheduler Score plugin: an integer score per feasible node, higher
// is better, the highest wins. Ties go by a fixed per-seed shuffle of the nodes (Ties::kNodeOrder):
// with kube-scheduler's per-pod random draw instead, FGD loses 5.7 points on the default trace
// and no longer matches the published curves, while with the fixed order all five scoring
// policies land within 0.8 points of them (docs/density.md). Scores are computed in milli-GPU
// and milli-CPU with the study's constants (128 cores, 8 GPUs) and its integer truncations.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {

/// The pod as the study's scorers see it.
struct StudyPod {
  std::int64_t cpu = 0;    ///< milli-CPU, 0 raised to 100 (GetNonzeroRequests)
  std::int64_t milli = 0;  ///< per GPU (fractions: the share of the GPU; whole: 1000; CPU-only: 0)
  int gpus = 0;            ///< GPUs asked for
  [[nodiscard]] std::int64_t total() const { return milli * gpus; }
  [[nodiscard]] bool shared() const { return gpus == 1 && milli < 1000 && milli > 0; }
};
/// `pod` on node `n` (a memory-sized fraction counts as its share of that node's first GPU).
StudyPod study_pod(const ClusterState& state, std::size_t n, const PodRequest& pod);

inline constexpr std::int64_t kStudyMaxCpu = 128000;  ///< the study's CPU normaliser (milli-CPU)
inline constexpr std::int64_t kStudyMaxGpu = 8000;    ///< the study's GPU normaliser (milli-GPU)

/// The study's "best" GPU choice: a shared pod takes the fitting GPU with the least free share
/// (ties: lowest index); whole GPUs and slots the lowest-index GPUs that can take them. Fit is the
/// ledger's (gpu_capacity_for). nullopt when too few GPUs can take the pod.
std::optional<std::vector<int>> study_best_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                                const PodTraits& traits);

class StudyPolicy : public Policy {
 public:
  explicit StudyPolicy(std::uint64_t seed) : seed_(seed) {}

  // Summary-based hooks: evaluate() replaces them; the bound allows every node (no pruning).
  std::int64_t gpu_rank(const PodTraits&, const GpuCandidate&) const override { return 0; }
  NodeKey node_key(const PodTraits&, const NodeSummary&, const GpuChoice&) const override { return {}; }
  NodeKey key_lower_bound(const PodTraits&, const SummaryRange& range) const override;

  std::optional<Evaluated> evaluate(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                    const PodTraits& traits) const final;
  Ties ties() const override { return Ties::kNodeOrder; }
  std::uint64_t tie_seed() const final { return seed_; }

 protected:
  /// The GPUs the pod takes on node `n` (default: study_best_gpus()).
  virtual std::optional<std::vector<int>> choose(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                                 const PodTraits& traits) const;
  /// The node's score for the pod with `gpus` chosen (higher is better): NodeKey::tier is its negation.
  virtual std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>& gpus) const = 0;
  /// The GPUs chosen and the node's score with them.
  struct Scored {
    std::vector<int> gpus;
    std::int64_t score = 0;
  };
  /// choose(), then score() of its GPUs; nullopt when choose() finds none. A policy whose choice
  /// already measured what its score needs (FGD's fragmentation after the pod) overrides this to
  /// say it once.
  virtual std::optional<Scored> choose_scored(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                              const PodTraits& traits) const;
  /// Orders nodes of equal score before the tie-break (lower first; NodeKey::value). The study's
  /// policies have none (0).
  virtual std::int64_t secondary(const ClusterState&, std::size_t, const PodRequest&, const std::vector<int>&) const { return 0; }

 private:
  std::uint64_t seed_;
};

}  // namespace fracpack::binpack
