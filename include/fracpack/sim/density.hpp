// Packing density on a real trace: the FGD study's experiment (Weng et al., "Beware of
// Fragmentation", USENIX ATC'23, §6), run through fracpack's own ledger and fit rules.
//
// Protocol (the study's simulator, hkust-adsl/kubernetes-scheduler-simulator): the pod list sorted
// by name is shuffled with the seed; then, until the GPU demand would pass `ratio` × cluster
// capacity, pods drawn uniformly with replacement from the list are appended as clones. Pods
// arrive in that order, never leave, and a pod that fits nowhere fails and is skipped. After every
// arrival the harness records arrived demand and allocated GPU (both in milli-GPU over the
// cluster's GPUs) and the fragmentation ratio of idle GPU; a curve point x (0..130) is the mean
// over the arrivals whose arrived demand rounds to x % of capacity (rows from x ± 1 when none).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/core/node.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/sim/alibaba.hpp"

namespace fracpack::density {

/// Curve points: arrived demand 0..130 % of capacity.
inline constexpr int kCurvePoints = 131;

struct Trace {
  std::string workload;                  ///< the pod list's file stem ("openb_pod_list_default")
  std::vector<NodeSpec> nodes;
  std::vector<trace::TracePod> pods;     ///< sorted by name
  std::vector<PodRequest> requests;      ///< trace::to_pod_request() of each pod, same order
  std::size_t shapes = 0;                ///< distinct pod_shape() among the requests
  std::vector<TypicalPod> typical;       ///< the target workload: typical_pods() of `pods`
  std::int64_t gpus = 0;                 ///< GPUs in the cluster
};

/// Reads a node list and a pod list (trace/alibaba.hpp); errors name the file, line and column.
/// kInvalidArgument too when no node has a GPU or no pod asks for one (nothing to measure).
Result<Trace> load_trace(const std::filesystem::path& nodes_csv, const std::filesystem::path& pods_csv);

/// What about the trace makes results misleading without stopping them: pods that can never run
/// (no node has an allowed GPU model, or none has enough GPUs, CPU or memory even when empty).
std::vector<std::string> trace_warnings(const Trace& trace);

/// The arrival order for one seed: indices into `pods` (an index appearing again is a clone).
/// Deterministic for (pods, capacity, ratio, seed) on every platform.
std::vector<std::size_t> inflate(const std::vector<trace::TracePod>& pods, std::int64_t capacity_milli, double ratio,
                                 std::uint64_t seed);

struct RunResult {
  std::string policy;
  std::uint64_t seed = 0;
  std::vector<double> allocation;  ///< kCurvePoints values, % of GPU capacity allocated (NaN: no data)
  std::vector<double> frag_ratio;  ///< kCurvePoints values, % of idle GPU that is fragmented
  std::int64_t arrivals = 0;
  std::int64_t placed = 0;
  std::int64_t failed = 0;
  double final_allocation = 0;      ///< % after the last arrival
  double unallocated_gpus = 0;      ///< GPU capacity left unallocated at the end, in GPUs
  /// % : the most any placement of the same placed pods could allocate — their GPU shares packed
  /// as the cutting-stock LP allows, every other GPU full (binpack/share_prices.hpp; CPU ignored).
  /// An upper bound: it assumes whole-GPU demand fills every GPU the shares leave free.
  double allocation_ceiling = 0;
  /// % : the most any placement of the same placed pods plus any of the whole-GPU pods that
  /// failed could allocate with every node's CPU, memory, GPU count and GPU model respected and the
  /// shares packed as well as the LP allows (capacity_ceiling.hpp): allocation_ceiling once CPU
  /// counts and whole-GPU demand is what arrived.
  double cpu_ceiling = 0;
  std::int64_t idle_gpus = 0;       ///< GPUs with nothing on them at the end
  double final_fragmentation = 0;   ///< Σ node fragmentation at the end, in GPUs
  double seconds = 0;               ///< wall time of the run
};

/// One policy and seed over the trace. kInvalidArgument for an unknown policy; kInternal if the
/// ledger refuses a placement the policy chose (a bug, never expected).
Result<RunResult> run(const Trace& trace, std::string_view policy, std::uint64_t seed, double ratio);

struct GridOptions {
  std::vector<std::string> policies;
  std::vector<std::uint64_t> seeds;
  double ratio = 1.3;
  unsigned jobs = 1;  ///< runs at once
  /// Called after each finished run with (done, total), from a worker thread, one call at a time.
  std::function<void(std::size_t, std::size_t)> progress;
};

/// Every policy × seed, `jobs` at a time; results in (policy, seed) order.
Result<std::vector<RunResult>> run_grid(const Trace& trace, const GridOptions& options);

/// Creates `dir` when missing and checks a file can be written there (before hours of runs).
Status prepare_output(const std::filesystem::path& dir);

/// Writes `allo.csv` and `frag_ratio.csv` (the published files' layout), `summary.md` and
/// `allocation.svg` into `dir` (created when missing).
Status write_report(const std::filesystem::path& dir, const Trace& trace, double ratio, const std::vector<RunResult>& runs);

/// The summary table (Markdown): per policy, the mean over seeds of allocation at 100 % and 130 %
/// ("—" when the run's --tune stops before), allocation after the last arrival, the LP ceiling
/// and the ceiling with CPU, unallocated GPUs, idle GPUs, fragmentation ratio at 130 %, failed pods and wall time per run.
std::string summary_table(const std::vector<RunResult>& runs);

/// The published results (fgd-published/allo.csv): our mean at 130 % next to theirs for every
/// policy present in both, for `workload` and inflation `tune`, as a Markdown table. kNotFound /
/// kInvalidArgument for an unreadable file or one without the published columns (called with no
/// runs, it only checks the file).
Result<std::string> compare_published(const std::filesystem::path& published_allo_csv, const std::string& workload,
                                      double tune, const std::vector<RunResult>& runs);

/// The study's label for one of our policy names ("fgd" → "06-FGD"), or "" when it has none.
std::string_view published_label(std::string_view policy);

}  // namespace fracpack::density
