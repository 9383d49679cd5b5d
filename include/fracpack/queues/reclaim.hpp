// Preemption and reclaim candidates: which running pods could make room for a pending one.
//
// Following KAI (pkg/scheduler/plugins/proportion/reclaimable/):
//   reclaim   pending pod P of queue Q may take from another queue only when Q, and each of its
//             ancestors, would stay within its fair share holding P (and, for a non-preemptible P,
//             its non-preemptible pods within quota). A candidate victim is a preemptible pod whose
//             queue, at the level where its branch meets Q's, is over its fair share in a resource P
//             needs — and stays a candidate only while taking it leaves that queue at or above its
//             fair share.
//   preempt   a preemptible pod of Q itself with a lower priority than P.
// A pod min-runtime protection shields at the shield's `now` is never a candidate
// (min_runtime.hpp: preemptMinRuntime for preemption, reclaimMinRuntime for reclaim).
// Neither applies to a non-preemptible P whose queue (or an ancestor) already holds its quota in
// non-preemptible pods: admission would still refuse P after any eviction.
// On each node that could ever take P, candidates are removed (tentatively) largest GPU memory
// first until P fits, then any removed pod P does not need is put back. The answer is the node
// needing the fewest victims, then the least GPU memory taken back, then the node name. The ledger
// ends as it began.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

struct Victims {
  std::string node;
  std::vector<std::string> pods;  ///< pod keys, sorted
  MiB gpu_memory{0};              ///< GPU memory they hold on that node
};

/// The best set of victims for `pod` (in leaf queue `queue`, charged `charge`; without a queue
/// only preemption within its own queue name applies), on the nodes of `nodes` (all when null),
/// or nullopt when no candidates make it fit. O(nodes · candidates · a fit check).
std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes = nullptr);

}  // namespace fracpack::queues
