// Which queue may take GPUs back from which, and whether a set of victims is a valid reclaim:
// the reclaim half of KAI's proportion plugin (pkg/scheduler/plugins/proportion/reclaimable/,
// pinned in docs/kai-compatibility.md), as pure functions of the queues' accounting. The search
// that picks the victims is reclaim.hpp; docs/queues.md rule 12 states these rules.
//
//   can_reclaim      KAI CanReclaimResources: the reclaimer's own (leaf) queue, holding the job,
//                    stays within its fair share; a non-preemptible job's queue also keeps its
//                    non-preemptible jobs within quota.
//   may_take_from    KAI FilterVictim: with the two queues taken at the level where their branches
//                    meet (getLeveledQueues), a reclaimer over its deserved quota may take only from
//                    a queue over its allocatable share (max(quota, fair share), capped by the
//                    limit); one within its quota, from a queue over its quota in a resource the
//                    job asks for (or, when it is at its quota in all of them, from any).
//   reclaimable      KAI Reclaimable: the victims, queue by queue, each job's release tested before
//                    it is taken (MaintainFairShareStrategy: the leveled victim queue still over its
//                    allocatable share; or GuaranteeDeservedQuotaStrategy: the leveled reclaimer
//                    within quota holding the job and the leveled victim queue still over its quota),
//                    then subtracted from the victim's queue and every ancestor; finally, at every
//                    level of the reclaimer's path, its saturation (allocated ÷ fair share, holding
//                    the job and less what it lost) above 1 must stay below each sibling's that
//                    lost victims (times the saturation multiplier), and a non-preemptible job keeps
//                    its queue's non-preemptible jobs within quota.
// Every comparison is KAI's: quota -1 is unlimited, and "within" is ≤ in every resource.
#pragma once

#include <cstddef>
#include <vector>

#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {

/// The job asking for room: its leaf queue and what its pods to place ask for, summed (KAI's
/// ReclaimerInfo.RequiredResources: a gang's first minMember pods).
struct Reclaimer {
  std::size_t queue = 0;
  Amounts request;
  bool preemptible = true;
};

/// What one victim job gives back, charged to leaf queue `queue`: a gang's members up to its
/// minimum count as one release, each member above it as its own (KAI getVictimResources).
struct Release {
  std::size_t queue = 0;
  Amounts amount;
};

/// KAI's `relcaimerSaturationMultiplier` (proportion plugin argument; ≥ 1, default 1).
struct ReclaimTerms {
  double saturation_multiplier = 1.0;
};

/// Whether the job may reclaim from other queues at all (KAI CanReclaimResources). O(resources).
[[nodiscard]] bool can_reclaim(const QueueBook& book, const Reclaimer& reclaimer);

/// Whether jobs of leaf queue `victim_queue` may be the reclaimer's victims (KAI FilterVictim),
/// judged on the queues as they stand. O(depth).
[[nodiscard]] bool may_take_from(const QueueBook& book, const Reclaimer& reclaimer, std::size_t victim_queue);

/// Whether evicting `releases` (in victim order) for the job is a valid reclaim (KAI
/// Reclaimable). Grouped by queue as KAI groups them; the queues in order of first appearance and
/// each queue's releases in their order (KAI iterates Go maps there: fracpack's fixed choice,
/// docs/kai-compatibility.md). O(releases · depth + depth · siblings).
[[nodiscard]] bool reclaimable(const QueueBook& book, const Reclaimer& reclaimer, const std::vector<Release>& releases,
                               const ReclaimTerms& terms = {});

}  // namespace fracpack::queues
