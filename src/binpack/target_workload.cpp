#include "binpack/target_workload.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>

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

/// Nodes with more GPUs than this are measured typical pod by typical pod (fragmentation()).
constexpr std::size_t kSortedGpus = 16;

}  // namespace

TargetWorkload::TargetWorkload(std::shared_ptr<const std::vector<TypicalPod>> pods)
    : pods_(std::move(pods)), id_(++g_last_workload_id) {
  for (const TypicalPod& m : *pods_) sizes_.push_back(m.milli.count());
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  for (const TypicalPod& m : *pods_) {
    size_of_.push_back(static_cast<std::size_t>(std::lower_bound(sizes_.begin(), sizes_.end(), m.milli.count()) - sizes_.begin()));
  }
}

double TargetWorkload::fragmentation(const NodeFree& free) const {
  const std::size_t gpus = free.gpu_milli.size();
  if (gpus > kSortedGpus) return fracpack::fragmentation(free, *pods_);
  std::array<std::int64_t, kSortedGpus> sorted{};
  std::copy(free.gpu_milli.begin(), free.gpu_milli.end(), sorted.begin());
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(gpus));
  std::int64_t all = 0;
  for (std::size_t g = 0; g < gpus; ++g) all += sorted[g];
  // Per size: the free capacity of the GPUs with less free than it, and how many have at least it.
  thread_local std::vector<std::int64_t> small;
  thread_local std::vector<int> roomy;
  small.resize(sizes_.size());
  roomy.resize(sizes_.size());
  std::size_t below = 0;
  std::int64_t below_sum = 0;
  for (std::size_t s = 0; s < sizes_.size(); ++s) {
    while (below < gpus && sorted[below] < sizes_[s]) below_sum += sorted[below++];
    small[s] = below_sum;
    roomy[s] = static_cast<int>(gpus - below);
  }
  // fragment_for() of each typical pod, from its size's numbers.
  double f = 0;
  for (std::size_t i = 0; i < pods_->size(); ++i) {
    const TypicalPod& m = (*pods_)[i];
    const std::size_t s = size_of_[i];
    std::int64_t unusable = all;  // a CPU pod, a node too short of GPUs or CPU, or of another model
    if (m.gpus != 0 && m.milli.count() != 0 && roomy[s] >= m.gpus && free.cpu >= m.cpu.count() && model_allowed(free, m)) {
      unusable = small[s];
    }
    f += m.weight * static_cast<double>(unusable);
  }
  return f;
}

double TargetWorkload::fragmentation_of(const ClusterState& state, std::size_t n, const NodeFree& free) const {
  // Allocated on a thread's first use: threads that never measure fragmentation hold nothing.
  thread_local std::unique_ptr<std::array<Remembered, kSlots>> table;
  if (!table) table = std::make_unique<std::array<Remembered, kSlots>>();
  const std::uint64_t stamp = state.node_stamp(n);
  Remembered& slot = (*table)[(stamp * 0x9e3779b97f4a7c15ULL + n) % kSlots];
  if (slot.workload != id_ || slot.stamp != stamp || slot.node != n) {
    slot = Remembered{id_, stamp, n, fragmentation(free)};
  }
  return slot.fragmentation;
}

}  // namespace fracpack::binpack
