// Per-node summaries: the few numbers that decide whether a pod could fit a node, kept up to date
// on every reserve/release so a placement never rescans every GPU of the cluster.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace fracpack {

/// One node's free capacity. Every field is an integer so comparisons are exact and deterministic.
struct NodeSummary {
  std::int64_t position = 0;        ///< rank of the node's name (ties break by name)
  std::int64_t free_cpu = 0;        ///< milli-CPU
  std::int64_t free_memory = 0;     ///< bytes
  std::int64_t free_pods = 0;
  std::int64_t idle_gpus = 0;       ///< idle devices that whole-GPU pods may take
  std::int64_t free_slots = 0;      ///< free device-plugin replica slots (kReplicas nodes)
  std::int64_t max_idle_free = 0;   ///< MiB: largest usable memory of an idle GPU that takes fractions
  /// MiB: largest free memory of a shared GPU that takes fractions, per ComputeMode.
  std::array<std::int64_t, 2> max_shared_free{0, 0};
  std::int64_t free_milli = 0;      ///< free GPU capacity in milli-GPU (idle 1000, shared by free memory)
  std::int64_t free_ratio_ppm = 0;  ///< free_milli per million of the node's GPU capacity
  std::int64_t cpu_ratio_ppm = 0;   ///< free cpu per million of allocatable cpu
  std::int64_t takes_whole = 0;     ///< 1 when whole-GPU / InfiniBand pods may land here
  std::int64_t takes_fraction = 0;  ///< 1 when fractional pods may land here
  std::int64_t takes_slots = 0;     ///< 1 for replica nodes
  std::int64_t usable = 0;          ///< 1 when the node is ready and schedulable

  // Capability classes: free_milli of the node when it belongs to the class, else kNone. Their
  // minimum over a subtree bounds the free capacity of the nodes that could take a pod of that
  // class, where lo.free_milli would count nodes that cannot (policies use them in bounds).
  static constexpr std::int64_t kNone = INT64_MAX;
  static constexpr int kIdleClasses = 8;     ///< class k: at least k+1 idle GPUs
  static constexpr int kMemoryClasses = 11;  ///< class j: a GPU with ≥ memory_class_floor(j) MiB free
  std::array<std::int64_t, kIdleClasses> free_if_idle{};
  std::array<std::int64_t, kMemoryClasses> free_if_idle_memory{};                  ///< an idle GPU
  std::array<std::array<std::int64_t, kMemoryClasses>, 2> free_if_shared_memory{};  ///< a shared GPU, per mode

  bool operator==(const NodeSummary&) const = default;
};

/// a × 10^6 ÷ b without overflow (0 when b ≤ 0): ratios in parts per million.
constexpr std::int64_t ppm(std::int64_t a, std::int64_t b) {
  if (b <= 0) return 0;
  __extension__ using Wide = __int128;
  return static_cast<std::int64_t>(static_cast<Wide>(a) * 1'000'000 / b);
}

/// The smallest free memory (MiB) of memory class j: 1 MiB, then 256 MiB doubling to 128 GiB.
constexpr std::int64_t memory_class_floor(int j) { return j == 0 ? 1 : std::int64_t{128} << j; }
/// The largest class whose floor is ≤ `mib` (-1 when mib < 1).
constexpr int memory_class_of(std::int64_t mib) {
  int j = -1;
  for (int c = 0; c < NodeSummary::kMemoryClasses && memory_class_floor(c) <= mib; ++c) j = c;
  return j;
}
/// The idle class for `gpus` GPUs (requests above 8 use the 8-GPU class: a valid superset).
constexpr int idle_class_of(std::int64_t gpus) {
  return static_cast<int>(std::min<std::int64_t>(gpus, NodeSummary::kIdleClasses)) - 1;
}

/// A node's rank for one pod under one policy: lower is better, compared field by field.
/// `position` comes last so two nodes never tie (docs/placement.md rule 9: score, then name).
struct NodeKey {
  std::int64_t tier = 0;
  std::int64_t value = 0;
  std::int64_t value2 = 0;
  std::int64_t position = 0;
  auto operator<=>(const NodeKey&) const = default;
};

/// The component-wise minimum (`lo`) and maximum (`hi`) of the summaries of a set of nodes.
/// A policy bounds its node key from `lo`/`hi`; a pod that cannot fit `hi` fits no node of the set.
struct SummaryRange {
  NodeSummary lo;
  NodeSummary hi;

  static SummaryRange of(const NodeSummary& s) { return {s, s}; }
  static SummaryRange merge(const SummaryRange& a, const SummaryRange& b);
};

}  // namespace fracpack
