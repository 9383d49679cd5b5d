// The target workload FGD and its refinements measure fragmentation for, with each node's
// fragmentation remembered by node stamp. Internal to src/binpack/.
//
// fragmentation() compares each GPU's free share with each typical pod's size: up to 256 typical
// pods × 8 GPUs per node measured, several times per evaluation. The typical pods share far fewer
// sizes (whole GPUs, a few dozen shares), so TargetWorkload sorts the node's free shares once and
// reads, per distinct size, the free capacity below it and the GPUs at or above it; each typical
// pod then costs a look-up. The sum runs over the typical pods in their order, term for term as
// fragmentation() adds them: the same number, not an approximation.
//
// Every pod shape evaluated on a node asks for the node's fragmentation before the pod; between
// two changes of the node it is one number. A queue replay evaluates a changed node for tens of
// shapes, so the number is kept per thread (no lock: a policy is shared by the server's threads)
// in a small direct-mapped table keyed by (workload, node position, node stamp). Node stamps are
// process-wide and name one usage of one node (ClusterState::node_stamp(); a copy of a state has
// its stamps), so a remembered number is the one fragmentation() would give.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/fragmentation.hpp"

namespace fracpack::binpack {

class TargetWorkload {
 public:
  explicit TargetWorkload(std::shared_ptr<const std::vector<TypicalPod>> pods);

  [[nodiscard]] const std::vector<TypicalPod>& pods() const { return *pods_; }
  /// fragmentation(free, pods()), where `free` is node_free(state, n) (milli-GPU).
  [[nodiscard]] double fragmentation_of(const ClusterState& state, std::size_t n, const NodeFree& free) const;
  /// fragmentation(free, pods()), worked out by size (milli-GPU).
  [[nodiscard]] double fragmentation(const NodeFree& free) const;

 private:
  std::shared_ptr<const std::vector<TypicalPod>> pods_;
  std::vector<std::int64_t> sizes_;   ///< the typical pods' distinct milli-GPU sizes, ascending
  std::vector<std::size_t> size_of_;  ///< per typical pod: its size's index in sizes_
  std::uint64_t id_;  ///< unique per instance, never reused: a table entry names its workload by it
};

}  // namespace fracpack::binpack
