// What a replay means for each queue, as numbers a person (or the tuner's objective) can compare:
// pending-time percentiles, pods that never started, preemptions, GPU-hours and their share,
// and the cluster's GPU allocation over the replay.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/sim/quota/replay.hpp"

namespace fracpack::quota {

/// Nearest-rank percentile of `sorted` (ascending) for p in (0, 1] (1 = the maximum); nullopt when empty.
std::optional<std::int64_t> percentile(const std::vector<std::int64_t>& sorted, double p);

/// The pending time of a pod that never started although a node of the empty cluster could hold
/// it: the replay ran out of events, so it would wait forever.
inline constexpr std::int64_t kWaitsForever = INT64_MAX;

/// A pending time for people: `none` without a pod, `forever` for kWaitsForever, else the seconds.
std::string seconds_text(const std::optional<std::int64_t>& seconds, std::string_view none, std::string_view forever);

struct QueueMetrics {
  std::string queue;
  /// Pending time in seconds, nearest rank, over every start (restarts included) and every pod
  /// that never started although a node could hold it (kWaitsForever): a queue whose pods never
  /// start does not look fast. Pods that fit no node at all are left out (never_startable); no
  /// quota changes their fate. nullopt: no pod to measure.
  std::optional<std::int64_t> pending_p50, pending_p95, pending_p99, pending_max;
  std::int64_t started = 0;
  std::int64_t never_started = 0;    ///< includes never_startable
  std::int64_t never_startable = 0;  ///< fit no node even on the empty cluster
  std::int64_t preemptions = 0;      ///< suffered
  std::int64_t preemptions_caused = 0;
  double gpu_hours = 0;
  double fair_share_gpu_hours = 0;
  double deserved_gpu_hours = 0;
  double over_quota_hours = 0;
  double share_pct = 0;  ///< its GPU-hours ÷ all queues' GPU-hours, in %
};

struct ReplayMetrics {
  std::vector<QueueMetrics> queues;  ///< ReplayReport::queues order
  /// Σ GPU-hours ÷ (cluster GPUs × replay span), in %: the cluster's mean GPU allocation.
  double allocation_pct = 0;
};

/// The metrics of `report` on a cluster of `cluster_gpus` GPUs.
ReplayMetrics metrics_of(const ReplayReport& report, std::int64_t cluster_gpus);

}  // namespace fracpack::quota
