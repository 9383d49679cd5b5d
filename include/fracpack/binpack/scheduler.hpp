// Placement decisions over a ClusterState: kube-scheduler's Filter and Score for one pod, the
// best node (Select), and the explanation when nothing fits. These functions only read the state;
// Ledger (ledger.hpp) combines them with reserve() under one lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack {

/// Nodes a decision may consider, by position; nullptr means all.
using NodeMask = std::vector<bool>;

/// A feasible node with the policy's GPU choice and key.
struct RankedNode {
  std::size_t node = 0;
  NodeKey key;
  GpuChoice choice;
  double score = 0;  ///< normalised to [0, 10] over the ranked set (kube-scheduler's MaxExtenderPriority)
};

/// Why a pod fits nowhere: kube-scheduler's "0/N nodes are available: ..." plus every node's verdict.
struct Explanation {
  Code code = Code::kUnschedulable;  ///< kUnschedulableAndUnresolvable when no node could ever fit
  std::string summary;               ///< "0/3 nodes are available: 2 Insufficient GPU memory, 1 ..."
  std::vector<std::pair<std::string, Verdict>> nodes;  ///< node name → verdict, in name order
  std::size_t nodes_omitted = 0;  ///< nodes counted in the summary but past the detail limit
  /// A running pod consolidation would move: "namespace/name", from its node to another.
  struct Move {
    std::string pod;
    std::string from;
    std::string to;
  };
  /// Where consolidation (docs/queues.md rule 14) would place a pod that fits nowhere as the
  /// cluster stands, by moving `consolidation_moves`; "" when no plan exists or none was sought
  /// (the extender's Explain seeks one for a preemptible pod of ours in no gang).
  std::string consolidation_node;
  std::vector<Move> consolidation_moves;
};

/// The best node for `pod` under `policy` and its GPUs, via the node index (typically O(log n)
/// nodes visited); nullopt when no node (of `mask`) fits. Same answer as rank_nodes()'s best.
std::optional<RankedNode> select(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                 const NodeMask* mask = nullptr);

/// Every feasible node among `nodes` (all when empty) with key, choice and normalised score,
/// best first. O(nodes). The reference that select() must agree with, and the extender's Prioritize.
std::vector<RankedNode> rank_nodes(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                   const std::vector<std::size_t>& nodes = {});

/// Filter: the verdict of every node among `nodes` (all when empty), with reasons.
std::vector<std::pair<std::size_t, Verdict>> filter_nodes(const ClusterState& state, const PodRequest& pod,
                                                          const std::vector<std::size_t>& nodes = {});

/// Why `pod` fits no node (of `mask`): counts per reason category over every node, kube-scheduler
/// style, and each node's own reasons for the first `detailed` nodes in name order (the rest are
/// counted in `nodes_omitted`). O(nodes); formatting the details dominates its cost.
Explanation explain(const ClusterState& state, const PodRequest& pod, const NodeMask* mask = nullptr,
                    std::size_t detailed = SIZE_MAX);

/// The part of a pod that placement looks at (GPU request, cpu, memory, extended resources,
/// selector), as a string: pods with equal shapes get equal answers from an unchanged ledger.
std::string pod_shape(const PodRequest& pod);

/// Memoised explain() answers for a run of decisions: a pod that fits nowhere gets the answer an
/// identical pod got on the same ledger version, instead of another O(nodes) pass.
class ExplainCache {
 public:
  Explanation explain(const ClusterState& state, const PodRequest& pod, std::size_t detailed);

 private:
  std::uint64_t version_ = ~std::uint64_t{0};
  std::unordered_map<std::string, Explanation> answers_;
};

/// The smallest labelled memory among the GPUs that could ever take `pod`: on nodes that pass
/// every rule waiting cannot change, GPUs with room for its request and limit. nullopt when no
/// GPU could. What a pending fraction is charged against (KAI issue 1847). O(nodes · GPUs).
std::optional<MiB> smallest_candidate_gpu(const ClusterState& state, const PodRequest& pod);

/// Whether `pod` fits node `n` now (every rule of docs/placement.md), without the policy's key or
/// any reason text: the cheapest yes or no. O(the node's GPUs).
bool fits_now(const ClusterState& state, std::size_t n, const PodRequest& pod);

/// Whether `pod` could ever fit node `n`: the rules waiting, preemption or moving pods cannot
/// change (readiness, cordon, selector, GPU kind and size, allocatable).
bool fits_ever_on(const ClusterState& state, std::size_t n, const PodRequest& pod);

/// The nodes `pod` could ever fit: those that pass every rule waiting, preemption or moving pods
/// cannot change (readiness, cordon, selector, GPU kind and size, allocatable). O(nodes).
NodeMask nodes_that_could_fit(const ClusterState& state, const PodRequest& pod);

/// Scores in [0, 10] for ranked nodes (sorted best first): tiers split the range, values inside a
/// tier are linear between the tier's best and worst (KAI's 9·(1 − (v − min)/(max − min)) shape).
void normalise_scores(std::vector<RankedNode>& ranked);

}  // namespace fracpack
