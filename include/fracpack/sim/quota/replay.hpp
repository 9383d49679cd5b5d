// A queue replay over time (docs/quota-tuning.md): pods arrive, wait, run for their run time and
// leave; every `period` seconds after an event the scheduler runs one KAI session (queue order,
// admission, placement: queues/session.hpp) over the pending pods. Time advances from event to
// event, never second by second, so a 149-day trace replays in seconds.
//
// Reclaim: after a session, each pod still pending gets the victims KAI's reclaim and preempt
// actions would give it (queues::find_victims; docs/queues.md rule 12); the victims go back
// to pending with their original arrival time and start over when they run again, and one more
// session runs in the same cycle. Pods evicted in a cycle do not reclaim in that cycle.
//
// Consolidation (ReplayOptions::consolidation; docs/queues.md rule 14): after the session, before
// reclaim (KAI's order: allocate, consolidation, reclaim), each pending preemptible pod that fits
// nowhere, in job order (priority, then arrival), may be placed by moving running pods
// (SchedulingState::plan_consolidation). A moved pod is evicted and placed again at once where the
// plan says; its run starts over there, as an evicted pod's does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/core/config.hpp"
#include "fracpack/core/node.hpp"
#include "fracpack/queues/consolidation.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/sim/quota/workload.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::quota {

struct ReplayOptions {
  std::int64_t period = 1;  ///< seconds between scheduling cycles (KAI's default schedulePeriod is 1 s)
  std::string policy = "pack";
  /// The policy's seed: the node order that breaks the FGD study's policies' ties (policy.hpp).
  std::uint64_t policy_seed = 0;
  PlacementConfig placement;
  /// Min-runtime protection's defaults; a pod's start is the cycle that placed it.
  queues::MinRuntimeDefaults min_runtime{};
  /// Off: no TimelinePoint per cycle (and no fragmentation measured); a tuner comparing many
  /// candidates needs only the per-queue totals.
  bool timeline = true;
  /// KAI's consolidation action after each session (off: allocate and reclaim only).
  bool consolidation = false;
  queues::ConsolidationLimits consolidation_limits{};
  /// At most this many pods moved by consolidation in any 3600 s (0: no bound).
  std::int64_t max_moves_per_hour = 0;
  /// On: ReplayReport::pods holds each workload pod's outcome.
  bool per_pod = false;
  /// Off: why a pod waits is not worked out (LongestWait::why stays empty), which lets a session
  /// skip pods asking no less than one that found no node (queues::SessionOptions::explain).
  bool reasons = true;
};

/// The queue's pod that waited longest, and why: the last reason the scheduler gave before it
/// started (or before the replay ended, for a pod that never started).
struct LongestWait {
  std::string pod;             ///< "" when no pod of the queue ever waited
  std::int64_t seconds = 0;    ///< start − arrival; quota::kWaitsForever (metrics.hpp) when it never started
  std::string why;             ///< "0/24 nodes are available: …", or the queue refusal ("NonPreemptibleOverQuota: …")
};

/// One leaf queue over the whole replay. GPU amounts are in GPUs (milli-GPU ÷ 1000) × hours.
struct QueueReport {
  std::string queue;
  double gpu_hours = 0;             ///< allocated GPU integrated over time
  double fair_share_gpu_hours = 0;  ///< the queue's fair share (as of each cycle) integrated
  double deserved_gpu_hours = 0;    ///< quota × replay span (0 for an unlimited quota)
  double over_quota_seconds = 0;    ///< time its allocated GPU exceeded its quota
  std::vector<std::int64_t> pending_seconds;  ///< per started pod: start − arrival, in start order
  std::int64_t started = 0;          ///< starts, restarts after eviction included
  /// Still pending when the workload ran out: with no event left, these never start.
  std::int64_t never_started = 0;
  /// Of never_started: pods no node of the empty cluster could hold (a request beyond every node);
  /// no quota can help them.
  std::int64_t never_startable = 0;
  std::int64_t preemptions_suffered = 0;  ///< its pods evicted for another pod
  std::int64_t preemptions_caused = 0;    ///< pods evicted for its pods
  std::int64_t moved = 0;                 ///< its pods moved by consolidation (each starts its run over)
  std::int64_t consolidated = 0;          ///< its pods started by consolidation
  LongestWait longest_wait;
};

/// The state after one scheduling cycle. GPU amounts in GPUs.
struct TimelinePoint {
  std::int64_t time = 0;                 ///< seconds (trace time)
  double cluster_allocated_pct = 0;      ///< allocated GPU ÷ the cluster's GPUs, in %
  /// FGD's fragmentation ratio of idle GPU (fragmentation.hpp) for the workload's typical pods, in %.
  double fragmentation_pct = 0;
  std::vector<double> allocated;         ///< per leaf queue (ReplayReport::queues order)
  std::vector<double> fair_share;        ///< per leaf queue
  std::vector<double> pending;           ///< per leaf queue: GPUs its pending pods ask for
  double capacity_gpus = 0;              ///< the GPUs the queues share (the cluster's, less other schedulers')
};

/// One workload pod over the replay (ReplayOptions::per_pod).
struct PodOutcome {
  std::int64_t arrival = 0;
  std::optional<std::int64_t> first_start;  ///< nullopt: it never started
  /// Seconds it spent pending in all: from arrival, and again from each eviction, to its start;
  /// to the end of the replay for a pod still pending then.
  std::int64_t pending_seconds = 0;
  std::int32_t moves = 0;                    ///< times consolidation moved it
};

struct ReplayReport {
  std::vector<QueueReport> queues;  ///< leaf queues in tree order
  std::vector<double> deserved;     ///< per leaf queue: GPU quota in GPUs (NaN when unlimited)
  std::vector<TimelinePoint> timeline;  ///< one point per scheduling cycle
  std::int64_t start = 0;           ///< first arrival (seconds)
  std::int64_t end = 0;             ///< last event
  std::int64_t events = 0;          ///< arrivals + departures
  std::int64_t cycles = 0;
  std::int64_t moves = 0;           ///< pods moved by consolidation
  std::vector<PodOutcome> pods;     ///< per workload pod, in the workload's order (ReplayOptions::per_pod)
};

/// Replays `workload` on `nodes` with `queues`. kInvalidArgument for a pod whose queue is not a
/// leaf of the queue tree (naming both), invalid queues (QueueTree::build), or period < 1.
Result<ReplayReport> replay(std::vector<NodeSpec> nodes, std::vector<queues::QueueSpec> queues, const TimedWorkload& workload,
                            const ReplayOptions& options);

}  // namespace fracpack::quota
