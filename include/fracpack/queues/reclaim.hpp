// Reclaim and preemption victims: which running pods to evict so a pending one fits, decided as
// KAI's reclaim and preempt actions decide (pkg/scheduler/actions/reclaim/reclaim.go,
// actions/preempt/preempt.go, with the proportion plugin's rules in reclaimable.hpp).
//
//   reclaim   first (KAI runs it before preempt). Only when the pod's queue may reclaim at all
//             (can_reclaim); candidates are preemptible pods of other queues whose queue passes
//             may_take_from.
//   preempt   then, when reclaim finds nothing: preemptible pods of the pod's own queue with a
//             lower priority.
// Candidates are taken one at a time in KAI's victim order (victim_order.hpp; docs/queues.md
// rule 12, item 4). After each one, the node it ran on is tried: the first node where the pod then
// fits is the answer, its victims every candidate taken there — provided, for reclaim, that they
// are a valid reclaim (reclaimable()). Pods min-runtime protection shields at the shield's
// `now` are never candidates (min_runtime.hpp). Neither applies to a non-preemptible pod whose
// queue (or an ancestor) already holds its quota in non-preemptible pods: admission would still
// refuse it after any eviction. The ledger ends as it began.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
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
  std::string job;   ///< the gang's key
  bool core = true;  ///< false: a member above the minimum, evicted alone
};
using VictimJobs = std::unordered_map<std::string, VictimJob>;

struct Victims {
  std::string node;
  std::vector<std::string> pods;  ///< pod keys, sorted: those on `node`, and their jobs' pods elsewhere
  MiB gpu_memory{0};              ///< GPU memory they hold
};

/// The victims for `pod` (in leaf queue `queue`, charged `charge`; without a queue only
/// preemption within its own queue name applies), on the nodes of `nodes` (all when null), or
/// nullopt when no candidates make it fit. `jobs` groups running gang members (null: every pod
/// alone); a job is a candidate only when all the pods it evicts together are. O(candidates · (log candidates + queues + a fit check
/// on one node)).
std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes = nullptr,
                                    const VictimJobs* jobs = nullptr);

}  // namespace fracpack::queues
