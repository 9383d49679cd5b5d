#include "binpack/target_workload.hpp"

#include <array>
#include <atomic>

namespace fracpack::binpack {
namespace {

std::atomic<std::uint64_t> g_last_workload_id{0};

/// One remembered fragmentation: of node `node` at stamp `stamp` for workload `workload`.
struct Remembered {
  std::uint64_t workload = 0;  ///< 0: empty (ids start at 1)
  std::uint64_t stamp = 0;
  std::size_t node = 0;
  double fragmentation = 0;
};

/// 4,096 entries (128 KiB) per thread: the nodes that changed recently, for the workload in use.
constexpr std::size_t kSlots = 4096;

}  // namespace

TargetWorkload::TargetWorkload(std::shared_ptr<const std::vector<TypicalPod>> pods)
    : pods_(std::move(pods)), id_(++g_last_workload_id) {}

double TargetWorkload::fragmentation_of(const ClusterState& state, std::size_t n, const NodeFree& free) const {
  thread_local std::array<Remembered, kSlots> table{};
  const std::uint64_t stamp = state.node_stamp(n);
  Remembered& slot = table[(stamp * 0x9e3779b97f4a7c15ULL + n) % kSlots];
  if (slot.workload != id_ || slot.stamp != stamp || slot.node != n) {
    slot = Remembered{id_, stamp, n, fragmentation(free, *pods_)};
  }
  return slot.fragmentation;
}

}  // namespace fracpack::binpack
