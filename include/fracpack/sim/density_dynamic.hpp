// Packing density over time (docs/density.md "Pods that come and go"): the trace's pods arrive
// at their creation times and leave when their run ends, through the queue replay
// (quota/replay.hpp, the engine of `quota replay`), with and without KAI's consolidation.
//
// Protocol, per seed:
//   pods      the static protocol's list (density.hpp inflate(): the list shuffled by the seed,
//             clones drawn with replacement until GPU demand reaches `tune` × capacity); each runs
//             for its trace run time (deletion − scheduled, else deletion − creation, as `quota
//             replay` reads the trace), a clone for its original's;
//   arrivals  an original at its creation time, a clone at the creation time of a pod drawn
//             uniformly from the list (so clones follow the trace's arrivals over time); times
//             start at the first arrival and are divided by the compression, run times are not;
//   load      the compression for which the offered demand — the GPUs of pods arrived and not past
//             their run, as if each started on arrival — averages `load` × the cluster's GPUs over
//             the arrival window, from the 5th percentile of arrivals to the last (bisection; the
//             trace's own times give about 1 %: it samples a cluster of long-running pods and a
//             month of short ones, so only compressed arrivals and clones load it);
//   cluster   every pod in one queue with no quota or limit (KAI's scheduling on one queue:
//             allocate, consolidation when on, nothing to reclaim), scheduling cycles every
//             second (KAI's schedulePeriod), the policy's ties by the seed's node order.
// Metrics over the arrival window and over the whole replay (until the last pod leaves): GPU allocation and fragmentation (time averages), pending GPU-hours
// (Σ GPUs × seconds pending), pods never started, p95 pending time per request shape, moves.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/core/status.hpp"
#include "fracpack/sim/density.hpp"
#include "fracpack/sim/quota/workload.hpp"

namespace fracpack::density {

struct DynamicOptions {
  double tune = 4;     ///< inflation: GPU demand of all pods together, × capacity
  double load = 1.0;   ///< mean offered demand over the arrival window, × capacity; below `tune`
  bool consolidation = false;
  std::int64_t max_moves_per_hour = 0;  ///< 0: no bound
  /// Jobs consolidation searches for per cycle (queues::ConsolidationLimits::max_jobs, KAI's
  /// queueDepthPerAction): the oldest waiting get the search every cycle (docs/density.md).
  std::size_t consolidation_jobs = 2;
};

/// The pods of one dynamic run, by arrival (compressed), and the compression used.
struct DynamicWorkload {
  quota::TimedWorkload workload;
  std::vector<std::size_t> trace_index;  ///< per pod: its pod (original or cloned) in Trace::pods
  double compression = 1;
  std::int64_t window_start = 0;         ///< the 5th percentile of arrivals, seconds (compressed)
  std::int64_t window_end = 0;           ///< the last arrival
  double mean_demand = 0;                ///< offered demand's mean over the window, × capacity
  double peak_demand = 0;                ///< offered demand's peak, × capacity
};

/// Builds the workload for `seed` (deterministic). kInvalidArgument when the list has no creation
/// times, or `load` is not below the inflated list's whole demand (raise `tune`), or ≤ 0.
Result<DynamicWorkload> dynamic_workload(const Trace& trace, std::uint64_t seed, const DynamicOptions& options);

/// Request shapes the pending times are reported by: "cpu", "share" (< 1 GPU), "1-gpu", "2-gpu", …
std::string shape_class(const trace::TracePod& pod);

struct ShapeWaits {
  std::int64_t pods = 0;
  std::int64_t never_started = 0;
  std::optional<std::int64_t> p95_seconds;  ///< quota::kWaitsForever when beyond the last start
  double pending_gpu_hours = 0;
};

struct DynamicRun {
  std::string policy;
  std::uint64_t seed = 0;
  double load = 0;
  bool consolidation = false;
  double compression = 1;
  std::int64_t arrivals = 0;
  std::int64_t never_started = 0;
  std::int64_t window_seconds = 0;       ///< the arrival window: last arrival − the 5th percentile's
  double mean_demand = 0;                ///< offered demand over the window, × capacity
  double peak_demand = 0;                ///< offered demand's peak, × capacity
  std::int64_t span_seconds = 0;         ///< first arrival to the last event
  double allocation_window_pct = 0;      ///< mean GPU allocation over the arrival window
  double allocation_span_pct = 0;        ///< mean GPU allocation over the whole replay
  double fragmentation_window_pct = 0;   ///< mean fragmentation ratio of idle GPU, arrival window
  double pending_gpu_hours = 0;          ///< every pod
  double pending_gpu_hours_multi = 0;    ///< pods of 2 GPUs or more
  std::map<std::string, ShapeWaits> by_shape;
  std::int64_t moves = 0;
  double seconds = 0;                    ///< wall time of the run (in a grid, the workload's build
                                         ///< counts in the runs that made it or waited for it)
  /// (seconds since the first arrival, % of GPU capacity allocated, fragmentation %, GPUs pending
  /// pods ask for), one per cycle.
  std::vector<std::array<double, 4>> timeline;
  double window_from = 0;  ///< the arrival window in the timeline's seconds
  double window_to = 0;
};

/// One dynamic run. kInvalidArgument for an unknown policy or dynamic_workload()'s refusals.
Result<DynamicRun> run_dynamic(const Trace& trace, std::string_view policy, std::uint64_t seed, const DynamicOptions& options);

struct DynamicGridOptions {
  std::vector<std::string> policies;
  std::vector<std::uint64_t> seeds;
  std::vector<double> loads{1.0};
  std::vector<bool> consolidation{false, true};
  double tune = 4;
  std::int64_t max_moves_per_hour = 0;
  std::size_t consolidation_jobs = 2;
  unsigned jobs = 1;
  std::function<void(std::size_t, std::size_t)> progress;
};

/// Every load × policy × consolidation × seed, `jobs` at a time, in that order (the runs of one
/// load and seed share one dynamic_workload(), built once).
Result<std::vector<DynamicRun>> run_dynamic_grid(const Trace& trace, const DynamicGridOptions& options);

/// The summary (Markdown): per load, policy and consolidation, means over seeds: the offered
/// demand's peak, allocation and fragmentation over the arrival window, pending GPU-hours (all
/// pods, pods of 2+ GPUs), pods never started, moves, p95 wait per request shape, wall time.
std::string dynamic_summary_table(const std::vector<DynamicRun>& runs);

/// Writes `runs.csv` (one row per run), `summary.md` and `allocation-<load>.svg` (allocation over
/// time per policy and consolidation, seed mean) into `dir`.
Status write_dynamic_report(const std::filesystem::path& dir, const Trace& trace, const std::vector<DynamicRun>& runs);

}  // namespace fracpack::density
