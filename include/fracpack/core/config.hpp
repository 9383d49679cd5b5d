// Settings shared by decoding and placement. Defaults match a stock KAI Scheduler install.
#pragma once

#include <string>
#include <vector>

#include "fracpack/core/units.hpp"

namespace fracpack {

/// KAI's global `gpuSharingMode` (KAI SchedulingShard spec / kai-scheduler config).
enum class GpuSharingMode {
  /// Fractional pods only go to nodes whose gpu-fractioning condition is Ready (driver-enforced).
  kNvFractions,
  /// Legacy KAI: fractional pods may go to any GPU node; memory is not enforced by the driver.
  kNonMemoryEnforced,
};

struct DecodeConfig {
  /// Pod label keys that name the queue, first match wins (KAI: kai.scheduler/queue; older: runai/queue).
  std::vector<std::string> queue_label_keys{"kai.scheduler/queue", "runai/queue"};
  std::string default_queue = "default-queue";
  /// spec.schedulerName values that are ours. A running pod of another scheduler holds its node
  /// resources but is not charged to a queue, and its share is taken out of what queues divide
  /// (as KAI does). A pod without schedulerName counts as ours.
  std::vector<std::string> scheduler_names{"kai-scheduler"};
  /// Resource names that mark an RDMA/InfiniBand request: exact names, and prefixes ending in '/'.
  std::vector<std::string> rdma_resources{"rdma/", "nvidia.com/hostdev"};
};

struct PlacementConfig {
  GpuSharingMode sharing_mode = GpuSharingMode::kNvFractions;
  /// Memory kept free on every GPU and out of placement (KAI issue 2212: fractions that fill 100 %
  /// of labelled memory OOM because the driver and context need some).
  MiB reserved_per_gpu{0};
  /// Node label whose value names the network leaf; InfiniBand gangs prefer one leaf
  /// (NVIDIA topograph labels). Empty disables the preference.
  std::string network_leaf_label = "network.topology.nvidia.com/leaf";
};

}  // namespace fracpack
