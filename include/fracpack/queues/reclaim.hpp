// Preemption and reclaim candidates: which running pods could make room for a pending one.
//
// A running pod is a candidate victim of pending pod P when it is preemptible and either belongs
// to another queue that holds more than its fair share (reclaim) or to P's own queue with a lower
// priority than P (preempt). On each node that could ever take P, candidates are removed
// (tentatively) largest GPU memory first until P fits, then any removed pod P does not need is put
// back. The answer is the node needing the fewest victims, then the least GPU memory taken back,
// then the node name. The ledger is left exactly as it was.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fracpack/cluster_state.hpp"
#include "fracpack/policy.hpp"
#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {

struct Victims {
  std::string node;
  std::vector<std::string> pods;  ///< pod keys, sorted
  MiB gpu_memory{0};              ///< GPU memory they hold on that node
};

/// The best set of victims for `pod`, or nullopt when no candidates make it fit anywhere.
/// O(nodes · candidates · a fit check).
std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    const Policy& policy);

}  // namespace fracpack::queues
