#include "fracpack/queues/charge.hpp"

#include <algorithm>

#include "fracpack/scheduler.hpp"

namespace fracpack::queues {
namespace {

/// Hundredths of a GPU of `memory` that `f` takes on one device, rounded up.
std::int64_t hundredths(const GpuFraction& f, std::optional<MiB> memory) {
  if (f.portion) return (f.portion->count() + 9) / 10;
  if (!memory || memory->count() <= 0) return 100;
  return std::min<std::int64_t>(100, (f.memory->count() * 100 + memory->count() - 1) / memory->count());
}

Amounts cpu_and_memory(const PodRequest& pod) { return Amounts(0, pod.cpu.count(), pod.memory.count()); }

}  // namespace

Amounts charge(const PodRequest& pod, std::optional<MiB> gpu_memory) {
  Amounts out = cpu_and_memory(pod);
  if (const auto* w = pod.whole()) out[Resource::kGpu] = 1000LL * w->count;
  if (const auto* f = pod.fraction()) out[Resource::kGpu] = 10 * f->num_devices * hundredths(*f, gpu_memory);
  return out;
}

Amounts charge_placed(const PodRequest& pod, const ClusterState& state, const Allocation& allocation) {
  const auto* f = pod.fraction();
  if (f == nullptr) return charge(pod, std::nullopt);
  Amounts out = cpu_and_memory(pod);
  for (int g : allocation.choice.gpus) {
    out[Resource::kGpu] += 10 * hundredths(*f, state.node(allocation.node).gpus[static_cast<std::size_t>(g)].memory);
  }
  return out;
}

Amounts charge_pending(const PodRequest& pod, const ClusterState& state) {
  return charge(pod, pod.fraction() ? smallest_candidate_gpu(state, pod) : std::nullopt);
}

}  // namespace fracpack::queues
