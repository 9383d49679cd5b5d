// Reclaim and preemption victims: which running pods must leave so a pending job fits, decided as
// KAI's reclaim and preempt actions decide (pkg/scheduler/actions/reclaim/reclaim.go,
// actions/preempt/preempt.go and their solver actions/common/solvers, with the proportion
// plugin's rules in reclaimable.hpp). docs/queues.md rule 12 states every step:
//
//   reclaim   first (KAI runs it before preempt). Only when the job's queue may reclaim at all
//             (can_reclaim); candidates are preemptible pods of other queues whose queue passes
//             may_take_from.
//   preempt   then: preemptible pods of the job's own queue with a lower priority.
// Candidates are taken one at a time in KAI's victim order (victim_order.hpp). After each one, a
// single pod is tried on the node it ran on, a gang's minimum on every node. Where the job first
// fits, the candidates taken there leave — but with the job placed, one that still fits where it
// runs stays, one that fits elsewhere moves (KAI pipelines it; it gives nothing back), the rest
// are evicted, and for reclaim the evicted ones must be a valid reclaim (reclaimable()). Pods
// min-runtime protection shields at the shield's `now` are never candidates (min_runtime.hpp).
// Neither applies to a non-preemptible pod whose queue (or an ancestor) already holds its quota
// in non-preemptible pods: admission would still refuse it after any eviction. The ledger ends
// as it began.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/gang.hpp"
#include "fracpack/queues/consolidation.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {

/// Min-runtime protection for one search: the defaults, and now (seconds since the epoch).
struct VictimShield {
  MinRuntimeDefaults defaults;
  std::int64_t now = 0;
  /// Out, when not null: the earliest moment a candidate left out because it was shielded stops
  /// being shielded (shield_lapse); unchanged when none was. A replay wakes up then.
  std::optional<std::int64_t>* lapse = nullptr;
};

/// Which running pods are evicted together (KAI getVictimResources / GetTasksToEvict): a gang's
/// core — its members up to its minimum — as one victim; each member above the minimum alone,
/// before its core. By pod key; a pod not listed is a job of its own.
struct VictimJob {
  std::string job;       ///< the gang's key
  bool core = true;      ///< false: a member above the minimum, evicted alone
  bool planned = false;  ///< held for its gang's plan, not running yet: never a victim
  /// With sub-groups: its leaf sub-group (its place in the PodGroup's spec.subGroups), that
  /// leaf's minMember and how many of its pods run; -1 without (KAI's PodSet, for
  /// GetTasksToEvict's choice of the sub-group that gives next).
  int sub_group = -1;
  int sub_group_min = 0;
  int sub_group_running = 0;
};
using VictimJobs = std::unordered_map<std::string, VictimJob>;

struct Victims {
  std::string node;               ///< where the pod lands (a gang: its first member)
  std::vector<std::string> pods;  ///< pod keys evicted, sorted: those on the nodes it lands on, and their jobs' pods elsewhere
  MiB gpu_memory{0};              ///< GPU memory they hold
  /// Victims that run on elsewhere once the pod holds its place (KAI pipelines them): they leave
  /// their node too, but are placed again, so they give nothing back to their queue.
  std::vector<Move> moves;
  /// Where the job lands once they are gone: the pod, or each member of the gang's minimum.
  std::vector<Placement> placed;
  /// Every pod that must leave its node: those evicted, then those moved (what kube-scheduler's
  /// preemption deletes; the moved ones' controllers make them again).
  [[nodiscard]] std::vector<std::string> leaving() const {
    std::vector<std::string> out = pods;
    for (const Move& m : moves) out.push_back(m.pod);
    return out;
  }
};

/// How the search places victims again once the job holds its place (KAI's solver pipelines
/// victim jobs that fit). Unset members: none is placed again.
struct VictimReplacing {
  MovablePod running;  ///< the running pod behind an allocation: whether it still fits where it is (it stays)
  MovablePod movable;  ///< the same, when it may move elsewhere (consolidation's rule)
};

/// Which of KAI's two actions a search stands for: reclaim (other queues' pods), preempt (lower
/// priority pods of the job's own queue), or reclaim and then preempt.
enum class VictimPass : std::uint8_t { kReclaim = 1, kPreempt = 2, kBoth = 3 };

/// What must fit once the victims are gone. A single pod: on the node a victim just left. A gang
/// (KAI's reclaimer is a whole job): its minimum, all or nothing, anywhere (GangPlacer); its
/// victims are the candidates taken that had a pod on a node the gang lands on.
struct VictimTarget {
  const PodRequest& pod;      ///< the pod, or the gang's first member: queue, priority, preemptibility
  const Gang* gang = nullptr;  ///< set: the gang's minimum must fit
};

/// The victims for `target` (in leaf queue `queue`, charged `charge`; without a queue only
/// preemption within its own queue name applies), on the nodes of `nodes` (all when null), or
/// nullopt when no candidates make it fit. `jobs` groups running gang members (null: every pod
/// alone); a job is a candidate only when all the pods it evicts together are. `passes`: which
/// of reclaim and preempt to search. `replacing`: which victims may stay or move (null: none). O(candidates · (log candidates + queues + a fit check on
/// one node)); a gang's fit check places its minimum over every node.
std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const VictimTarget& target,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes = nullptr,
                                    const VictimJobs* jobs = nullptr, VictimPass passes = VictimPass::kBoth,
                                    const VictimReplacing* replacing = nullptr);

}  // namespace fracpack::queues
