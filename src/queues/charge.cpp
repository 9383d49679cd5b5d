#include "fracpack/queues/charge.hpp"

#include <algorithm>

#include "fracpack/binpack/scheduler.hpp"

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
    out[Resource::kGpu] += 10 * hundredths(*f, state.gpu_memory(allocation.node, static_cast<std::size_t>(g)));
  }
  return out;
}

Amounts charge_pending(const PodRequest& pod, const ClusterState& state) {
  return charge(pod, pod.fraction() ? smallest_candidate_gpu(state, pod) : std::nullopt);
}

Amounts charge_of_allocation(const ClusterState& state, const Allocation& a) {
  Amounts out(0, a.cpu.count(), a.memory.count());
  for (std::size_t k = 0; k < a.choice.gpus.size(); ++k) {
    const MiB memory = state.gpu_memory(a.node, static_cast<std::size_t>(a.choice.gpus[k]));
    switch (a.choice.hold) {
      case GpuHold::kWhole:
      case GpuHold::kSlot:
        out[Resource::kGpu] += 1000;
        break;
      case GpuHold::kFraction:
        out[Resource::kGpu] += memory.count() > 0
                                   ? 10 * std::min<std::int64_t>(100, (a.choice.memory[k].count() * 100 + memory.count() - 1) /
                                                                         memory.count())
                                   : 1000;
        break;
      case GpuHold::kNone:
        break;
    }
  }
  return out;
}

Amounts cluster_total(const ClusterState& state, const Amounts& foreign) {
  Amounts total;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    const NodeSpec& node = state.node(n);
    if (!node.ready || !node.schedulable) continue;
    const std::int64_t gpus = static_cast<std::int64_t>(node.gpus.size()) *
                              (node.sharing == SharingKind::kReplicas ? node.replica.replicas : 1);
    total += Amounts(1000 * gpus, node.cpu.count(), node.memory.count());
  }
  for (Resource r : kResources) total[r] = std::max<std::int64_t>(0, total[r] - foreign[r]);
  return total;
}

}  // namespace fracpack::queues
