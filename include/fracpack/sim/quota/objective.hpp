// What `fracpack quota tune` looks for, written the way an administrator says it:
//
//   "p95 pending of inference <= 60s, then maximise allocation"
//   "share within 10% of weight"
//   "max pending <= 2h, never started of research <= 0; then minimise preemptions"
//
// Grammar (case-insensitive; clauses separated by ",", ";", ".", "and" or "then"; at most one goal):
//   clause     := constraint | goal
//   constraint := metric ("<=" | "≤" | "<" | ">=" | "≥" | ">") number [unit]
//               | ["every queue's"] "share" ["of gpu-hours"] "within" number "%" "of" ["its"] "weight"
//   goal       := ("maximise" | "maximize" | "minimise" | "minimize") metric
//   metric     := ("p50" | "p95" | "p99" | "max") "pending" ["time"] ["of" QUEUE]   seconds
//               | "never started" ["of" QUEUE]                                       pods
//               | "preemptions" ["of" QUEUE]                                         suffered, count
//               | "gpu-hours" "of" QUEUE                                             GPU × hours
//               | "over-quota hours" ["of" QUEUE]                                    hours
//               | "share error" ["of" QUEUE]                                         % (below)
//               | "allocation"                                                       % of cluster GPU-hours
//   unit       := s | m | min | h | d (and their long forms) for pending times; "%" is optional
//   number     := a non-negative decimal, 1e3 notation allowed
// A word that is both a queue name and a grammar word means the queue after "of", a unit right
// after a number, and the grammar word elsewhere.
// Without "of QUEUE" a per-queue metric means its worst queue (the largest value; the smallest
// for a "≥" bound or a "maximise" goal).
//
// Share error of a queue: |its share of GPU-hours − its target share| ÷ target share, in %, where
// target shares are the GPU over-quota weights of the Queue file given to the tuner (its quotas
// when every weight is 0) — the weights the administrator states, not the candidate's.
//
// A candidate's score: the sum of each constraint's excess over its bound divided by the bound
// (0 = every constraint met: feasible), then the goal. Errors (kInvalidArgument) quote the clause
// and name the word that is not understood, listing the queues and metrics there are.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/sim/quota/metrics.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::quota {

enum class Metric {
  kPendingP50, kPendingP95, kPendingP99, kPendingMax,  // seconds
  kNeverStarted, kPreemptions,                        // counts
  kGpuHours, kOverQuotaHours,                         // hours
  kShareError,                                        // %
  kAllocation,                                        // % (cluster)
};

/// A metric of one queue, or of the worst queue (queue == ""), or of the cluster (allocation).
struct MetricRef {
  Metric metric = Metric::kAllocation;
  std::string queue;
};

struct Constraint {
  MetricRef ref;
  bool at_most = true;  ///< value ≤ bound; false: value ≥ bound
  double bound = 0;     ///< in the metric's unit (seconds for pending times), finite and ≥ 0
  std::string text;     ///< the clause as written
  bool strict = false;  ///< < or >: the bound itself does not meet it
};

struct Goal {
  MetricRef ref;
  bool maximise = true;
  std::string text;
};

struct Objective {
  std::vector<Constraint> constraints;
  std::optional<Goal> goal;
  std::vector<std::string> queues;    ///< the leaf queues, in report order
  std::vector<double> target_share;   ///< per queue, sums to 1 (share error's reference)
  std::string text;
};

/// Parses `text` for the leaf `queues` with their stated `weights` (any non-negative numbers:
/// the tuner passes the input's GPU over-quota weights, or quotas when all weights are 0).
Result<Objective> parse_objective(std::string_view text, const std::vector<std::string>& queues,
                                  const std::vector<double>& weights);

/// The value of `ref` in `m` (worst queue for an empty queue name; `larger_is_worse` picks which
/// end is worst). A pending time with no pod at all is 0.
double value_of(const Objective& objective, const MetricRef& ref, const ReplayMetrics& m, bool larger_is_worse = true);

/// "p95 pending of inference", "allocation", … for tables.
std::string metric_label(const MetricRef& ref);

/// How well one replay meets an objective. Both fields are unitless: a constraint's excess is
/// divided by its bound (a p95 pending of 90 s against "<= 60 s" adds 0.5), and the goal is the
/// metric's value in its own unit (seconds, %, GPUs) as value_of() gives it.
struct Score {
  double violation = 0;  ///< Σ excess ÷ bound over the constraints; 0 = feasible
  double goal = 0;       ///< the goal's value (0 without a goal)
  [[nodiscard]] bool feasible() const { return violation <= 0; }
};

/// Scores replay metrics `m` against `objective`; compare scores with better(), never by field.
Score score(const Objective& objective, const ReplayMetrics& m);

/// Whether `a` is better than `b`: less violation, then the better goal. Equal scores compare false.
bool better(const Objective& objective, const Score& a, const Score& b);

/// Each violated constraint as "p95 pending of inference 3600 s > 60 s"; empty when feasible.
std::vector<std::string> violations(const Objective& objective, const ReplayMetrics& m);

}  // namespace fracpack::quota
