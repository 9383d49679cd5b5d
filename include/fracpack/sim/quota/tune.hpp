// `fracpack quota tune`: searches each leaf queue's GPU quota and GPU over-quota weight for an
// objective (objective.hpp) by replaying the workload (replay.hpp) once per candidate.
//
// Search: a compass (pattern) search, the derivative-free coordinate method for noisy, discrete
// objectives. It starts from the better of two points — the Queue file as given, and quotas
// proportional to each queue's GPU-hours of demand in the workload — and each round replays every
// neighbour of the current best in parallel: each queue's quota ± step, `step` GPUs moved from
// each other queue to it, each weight × 2 and ÷ 2; in the first round also each queue with no
// quota and with all it may have (the others shrunk to fit), to step off flat ground. Unless
// `oversubscribe` is set, no candidate promises more GPUs than the cluster has (Σ leaf quotas ≤
// cluster GPUs, an unlimited quota counting as the whole cluster): a quota is meant to be a
// guarantee. An input above that is replayed and shown, but never recommended.
// A better neighbour becomes the current point; a round without one halves the quota step (from a
// quarter of the cluster down to one GPU) and narrows the weight factor (2 → 1.5 → stop). The
// search ends when converged, after `max_rounds`, or at the first round boundary past the time
// budget; rounds are evaluated whole, so the answer depends only on how many rounds ran, and with
// max_rounds (and no budget) it is the same on every machine.
//
// What is shared between candidates: the nodes, the parsed workload and every result (a candidate
// seen before is not replayed again). A replay is not resumed from another candidate's state:
// quotas change fair shares from the first cycle, so no prefix of one replay is valid for another.
//
// A candidate sets, per leaf queue, spec.resources.gpu.quota (whole GPUs, 0 … cluster GPUs) and
// gpu.overQuotaWeight (0 … 64, in tenths once tuned). CPU and memory quotas that are finite follow the GPU
// quota's share of the cluster (unless `scale_cpu_memory` is off); unlimited and zero ones stay.
// A parent queue with a finite GPU quota gets the sum of its children's, so the tree stays valid.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fracpack/core/node.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/sim/quota/objective.hpp"
#include "fracpack/sim/quota/replay.hpp"
#include "fracpack/sim/quota/workload.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::quota {

/// One leaf queue's tuned terms.
struct Setting {
  std::int64_t gpu_quota = 0;   ///< milli-GPU (whole GPUs in practice)
  std::int64_t gpu_weight = 0;  ///< over-quota weight in thousandths
  auto operator<=>(const Setting&) const = default;
};

struct Candidate {
  std::vector<Setting> settings;  ///< per leaf, Objective::queues order
  ReplayMetrics metrics;
  Score score;
  double distance = 0;  ///< from the input: Σ |Δ quota| in GPUs + Σ |Δ weight|; breaks ties
  std::string origin;   ///< "input", "demand", or "round N"
  /// Why it may not be recommended, "" when it may: a quota above its queue's GPU limit or the
  /// cluster, or (without oversubscribe) quotas adding up to more than the cluster. Only the
  /// input can be such a candidate; it is then shown, ranked last, never recommended.
  std::string not_allowed;
};

struct TuneOptions {
  ReplayOptions replay;          ///< period, policy, placement (the timeline is turned off)
  double budget_seconds = 300;   ///< wall time; checked between rounds (≤ 0: no budget)
  std::size_t max_rounds = 0;    ///< 0: no limit
  unsigned jobs = 0;             ///< candidates replayed at once; 0: one per core
  bool scale_cpu_memory = true;
  bool oversubscribe = false;    ///< allow Σ leaf GPU quotas above the cluster's GPUs
  /// Called after each round with (rounds done, candidates replayed, the best so far, seconds).
  std::function<void(std::size_t, std::size_t, const Candidate&, double)> on_round;
};

struct TuneReport {
  Objective objective;
  Candidate input;                 ///< the Queue file as given
  std::vector<Candidate> candidates;  ///< every candidate replayed, best first: the recommendation first
  std::vector<queues::QueueSpec> recommended;  ///< the Queue specs of candidates.front()
  std::size_t evaluated = 0;       ///< candidates replayed
  std::size_t rounds = 0;
  bool converged = false;          ///< stopped because no step was left, not by budget or rounds
  bool budget_ran_out = false;     ///< stopped by the time budget (else, unless converged, by max_rounds)
  double seconds = 0;              ///< wall time of the search
  std::int64_t cluster_gpus = 0;
  std::size_t shown = 5;           ///< candidates a table shows
};

/// The leaf queues of `specs` in tree order, and their stated GPU over-quota weights (their GPU
/// quotas when every weight is 0): what share error is measured against.
Result<std::pair<std::vector<std::string>, std::vector<double>>> leaves_and_weights(const std::vector<queues::QueueSpec>& specs);

/// `specs` with `settings` applied to the leaves (and parents and CPU/memory as described above).
std::vector<queues::QueueSpec> apply_settings(const std::vector<queues::QueueSpec>& specs, const std::vector<std::string>& leaves,
                                              const std::vector<Setting>& settings, const std::vector<NodeSpec>& nodes,
                                              bool scale_cpu_memory);

/// Runs the search. kInvalidArgument for bad queues or pods (as replay() reports them), or an
/// objective naming no leaf queue. An objective that cannot be met is not an error: the report's
/// best candidate is then the closest one (candidates.front().score.feasible() is false).
Result<TuneReport> tune(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& specs, const TimedWorkload& workload,
                        const Objective& objective, const TuneOptions& options);

}  // namespace fracpack::quota
