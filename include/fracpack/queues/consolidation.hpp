// Consolidation: room for a pending job made by moving running pods, never by stopping them
// (docs/queues.md rule 14).
//
// Following KAI's consolidation action (pkg/scheduler/actions/consolidation/consolidation.go, with
// the scenario solver of pkg/scheduler/actions/common/solvers/): a pending job that fits nowhere
// as the cluster stands is placed when some running pods, evicted and allocated again, all find a
// place too (KAI's allPodsReallocated: no victim is left releasing). Here:
//   - the job's pods are placed one after another; one that fits as the cluster stands (with the
//     job's earlier pods and moves in place) goes where the policy puts it, one that does not is
//     given room on one node by moving pods off it;
//   - on a node, movable pods are taken off in the order that frees the GPUs the pod needs at the
//     least cost (the GPUs needing the fewest moves, then the least memory moved; CPU-only pods
//     last) until the pod fits, then every one it does not need is put back (a pod with no room
//     anywhere else is never taken: its GPUs count as unusable there); the pod is placed
//     there, and each taken pod is placed again where the policy puts it (the same node
//     included), the biggest first. A node where one of them finds no place is no answer;
//   - nodes are tried in the order of a lower bound of the moves and GPU memory any plan on them
//     needs, and the search stops at the first node whose bound cannot beat the best plan found:
//     fewest moves, then least GPU memory moved, then node order;
//   - nothing is searched unless the cluster's free GPU capacity (a memory request counted on its
//     largest GPU), CPU and memory cover the pods: moving pods only moves what they hold;
//   - at most `max_moves` pods move (KAI's --max-consolidation-preemptees, 16), at most
//     `max_nodes` nodes are tried per pod, in bound order, and a caller running a pass over many
//     jobs searches for at most `max_jobs` of them (KAI bounds its scenario search by time, which
//     would make the plans depend on the machine; these counts do not).
// Which pods may move, and the queue rules around it (KAI PR 1565), are the caller's
// (SchedulingState::plan_consolidation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/verdict_cache.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/queues/failed_pods.hpp"

namespace fracpack::queues {

/// One running pod moved: evicted from where it runs and placed again.
struct Move {
  std::string pod;             ///< "namespace/name"
  std::string from_node;
  std::vector<int> from_gpus;  ///< device indices it held (empty: a CPU-only pod)
  std::string to_node;
  GpuChoice to;                ///< the GPUs it takes there
  MiB gpu_memory{0};           ///< GPU memory it holds, summed over its devices
};

/// Where a pending job's pods go and which running pods move to make room. The ledger it was
/// computed on is unchanged; applying it is the caller's (SchedulingState::consolidate).
struct ConsolidationPlan {
  std::vector<Placement> placements;  ///< the job's pods, in the order given
  std::vector<Move> moves;            ///< in the order they are placed again
  MiB moved_memory{0};                ///< Σ Move::gpu_memory
};

struct ConsolidationLimits {
  std::size_t max_moves = 16;  ///< pods moved for one job (KAI --max-consolidation-preemptees, 16)
  std::size_t max_nodes = 96;  ///< nodes tried for one pod that fits nowhere
  /// Jobs searched for in one pass, in job order (KAI's queueDepthPerAction for consolidation;
  /// unset there: every job, under a time budget). SIZE_MAX: every job.
  std::size_t max_jobs = SIZE_MAX;
};

/// The running pod behind an allocation when it may move for some job, else nullptr. Whether it
/// may move for a given job is MoveGate's.
using MovablePod = std::function<const PodRequest*(const Allocation&)>;

/// Which movable pods a job may move: those of its queue, and of any queue when `other_queues`.
struct MoveGate {
  std::string queue;
  bool other_queues = true;
};

namespace detail {
struct NodeHeld;
struct NodeOption;
}

/// Consolidation over many pending jobs, in one cycle or many (a replay keeps one for its whole
/// run): what each node holds and what each node would cost a pod of a given ask, remembered per
/// node stamp; the caller's verdict cache. Valid while which pods may move changes only with the
/// ledger (PodGroup and Queue edits do not come in between).
class ConsolidationPass {
 public:
  /// `verdicts`, when given, places through cached verdicts (VerdictCache::select: the same nodes).
  explicit ConsolidationPass(VerdictCache* verdicts = nullptr);
  ~ConsolidationPass();
  ConsolidationPass(const ConsolidationPass&) = delete;
  ConsolidationPass& operator=(const ConsolidationPass&) = delete;

  [[nodiscard]] VerdictCache* verdicts() const { return verdicts_; }
  /// Node `n` as it is now (read again when its stamp moved). Internal to consolidation.cpp.
  const detail::NodeHeld& held(const ClusterState& state, std::size_t n, const MovablePod& movable);
  /// Running pods with no room anywhere else, as of the ledger the last call left (cleared when
  /// it changed since). Internal to consolidation.cpp, as are begin and end of a call.
  FailedPods& stranded() { return stranded_; }
  /// Running pods that have room elsewhere, as of the same ledger (an ask no larger, under the
  /// same constraints, has room too). Internal.
  [[nodiscard]] bool has_room(const FailedPods::Ask& ask) const;
  void add_room(const FailedPods::Ask& ask);
  void begin(const ClusterState& state);
  void end(const ClusterState& state);
  /// Per node, what a job of this ask would cost there, as of each node's stamp. Internal.
  std::vector<detail::NodeOption>& options(const std::string& ask, std::size_t nodes);

 private:
  VerdictCache* verdicts_;
  std::vector<std::unique_ptr<detail::NodeHeld>> nodes_;
  std::unordered_map<std::string, std::vector<detail::NodeOption>> options_;
  FailedPods stranded_;
  std::unordered_map<std::string, std::vector<FailedPods::Ask>> room_;  ///< per constraints, the largest
  std::uint64_t version_ = 0;
};

/// A plan that places every pod of `pods` (all or nothing) with at most `limits.max_moves` moves
/// of pods `gate` lets the job move, each moved pod placed again; nullopt when there is none, or
/// when the pods fit without moving anything (that is allocation's work, not consolidation's).
/// `state` is changed during the search and left exactly as it was. Deterministic: same ledger,
/// same plan. O(pods · (nodes · GPUs + max_nodes · (pods on a node) · a fit check + moves · select)).
std::optional<ConsolidationPlan> find_consolidation(ClusterState& state, const std::vector<PodRequest>& pods,
                                                    const Policy& policy, const MovablePod& movable, const MoveGate& gate,
                                                    ConsolidationPass& pass, const ConsolidationLimits& limits = {});

}  // namespace fracpack::queues
