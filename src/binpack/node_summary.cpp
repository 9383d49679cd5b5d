#include "binpack/node_summary.hpp"

#include <algorithm>

namespace fracpack::binpack {

bool takes_fractions(const ClusterState& state, std::size_t n) {
  const NodeSpec& node = state.node(n);
  if (node.gpus.empty() || node.sharing == SharingKind::kReplicas) return false;
  if (state.config().sharing_mode == GpuSharingMode::kNonMemoryEnforced) return true;
  return node.sharing == SharingKind::kNvFractions && node.fractions_ready;
}

NodeSummary summarize(const ClusterState& state, std::size_t n) {
  const NodeSpec& node = state.node(n);
  const NodeUsage& used = state.usage(n);
  NodeSummary s;
  s.position = state.order_label(n);
  s.usable = node.ready && node.schedulable ? 1 : 0;
  s.free_cpu = saturating_add(node.cpu.count(), -used.cpu.count());
  s.free_memory = saturating_add(node.memory.count(), -used.memory.count());
  s.free_pods = node.pods - used.pods;
  s.cpu_ratio_ppm = ppm(s.free_cpu, node.cpu.count());

  s.free_if_idle.fill(NodeSummary::kNone);
  s.free_if_idle_memory.fill(NodeSummary::kNone);
  for (auto& by_mode : s.free_if_shared_memory) by_mode.fill(NodeSummary::kNone);
  if (s.usable == 0) {  // a node that is not ready or cordoned offers nothing
    s.free_cpu = s.free_memory = s.free_pods = s.cpu_ratio_ppm = 0;
    return s;
  }
  const bool replicas = node.sharing == SharingKind::kReplicas;
  s.takes_whole = !replicas && !node.gpus.empty() ? 1 : 0;
  s.takes_slots = replicas ? 1 : 0;
  s.takes_fraction = takes_fractions(state, n) ? 1 : 0;

  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuUsage& u = used.gpus[g];
    if (u.fenced()) continue;  // offers nothing to new placements
    if (replicas) {
      const int free = node.replica.replicas - u.slots;
      s.free_slots += free;
      s.free_milli += 1000LL * free / node.replica.replicas;
      continue;
    }
    const std::int64_t usable = state.usable(n, g).count();
    const std::int64_t memory = std::max<std::int64_t>(1, state.gpu_memory(n, g).count());
    const std::int64_t compute_base = std::max<std::int64_t>(1, usable);  // compute_portion()'s denominator
    switch (u.state) {
      case GpuState::kIdle:
        ++s.idle_gpus;
        s.free_milli += 1000;
        s.max_idle_free = std::max(s.max_idle_free, usable);
        break;
      case GpuState::kWhole:
        break;
      case GpuState::kSharedTimeSlicing:
      case GpuState::kSharedSmSharing: {
        std::int64_t free = std::max<std::int64_t>(0, usable - u.used.count());
        s.free_milli += free * 1000 / memory;
        if (u.state == GpuState::kSharedSmSharing) {
          free = std::min(free, (100 - u.compute) * compute_base / 100);  // compute left, as memory
        }
        auto& slot = s.max_shared_free[u.state == GpuState::kSharedSmSharing ? 1 : 0];
        slot = std::max(slot, free);
        break;
      }
    }
  }
  for (int k = 0; k < NodeSummary::kIdleClasses && k < s.idle_gpus; ++k) s.free_if_idle[k] = s.free_milli;
  for (int j = 0; j <= memory_class_of(s.max_idle_free); ++j) s.free_if_idle_memory[j] = s.free_milli;
  for (std::size_t m = 0; m < 2; ++m) {
    for (int j = 0; j <= memory_class_of(s.max_shared_free[m]); ++j) s.free_if_shared_memory[m][j] = s.free_milli;
  }
  const std::int64_t capacity = 1000LL * static_cast<std::int64_t>(node.gpus.size());
  s.free_ratio_ppm = ppm(s.free_milli, capacity);
  return s;
}

}  // namespace fracpack::binpack
