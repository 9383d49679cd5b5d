// `fracpack quota replay` and `fracpack quota tune`: the queue replay (quota/replay.hpp) and the
// quota tuner (quota/tune.hpp) as commands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/sim/quota/replay.hpp"
#include "fracpack/sim/quota/tune.hpp"

namespace fracpack {

/// Where a replay's cluster, queues and workload come from.
struct QuotaInputFiles {
  std::string nodes;   ///< the trace's node CSV, or Node objects (YAML/JSON)
  std::string queues;  ///< KAI Queue objects (YAML/JSON)
  std::string pods;    ///< the trace's pod CSV, or Pod objects (YAML/JSON; quota/workload.hpp)
  std::string rules;   ///< queue rule file, with a pod CSV only
  double node_fraction = 1;  ///< keep this fraction of the nodes, spread evenly (model mix kept)
};

struct QuotaReplayOptions : QuotaInputFiles {
  std::int64_t period = 1;
  std::string policy = "pack";
  bool consolidation = false;  ///< KAI's consolidation action in each cycle (docs/queues.md rule 14)
  queues::MinRuntimeDefaults min_runtime{};  ///< the minruntime plugin's defaults
  std::string out;     ///< "" or a directory for queues.csv, timeline.csv and queue-<name>.svg
  std::string output = "table";  ///< -o: "table" (Markdown), "json" or "yaml" (the same document)
};

struct QuotaTuneOptions : QuotaInputFiles {
  std::string objective;        ///< objective.hpp's grammar
  std::int64_t period = 1;
  std::string policy = "pack";
  bool consolidation = false;  ///< KAI's consolidation action in each cycle (docs/queues.md rule 14)
  queues::MinRuntimeDefaults min_runtime{};  ///< the minruntime plugin's defaults
  double budget_seconds = 300;  ///< ≤ 0: none
  std::size_t max_rounds = 0;   ///< 0: no limit
  unsigned jobs = 0;            ///< 0: one per core
  std::size_t top = 5;
  bool scale_cpu_memory = true;
  bool oversubscribe = false;   ///< allow quotas that add up to more than the cluster
  std::string out;  ///< "" or a directory for queues.yaml, candidates.csv and the best candidate's replay files
  /// -o: "table" (the report, then the Queue objects, on stdout); "yaml" (only the recommended
  /// Queue objects on stdout, for `| kubectl apply -f -`, nothing when the objective is not met;
  /// the report on stderr); "json" (one document: tune_json()).
  std::string output = "table";
};

/// Warnings about the queues against the cluster: top-level GPU quotas summing above its GPUs.
std::vector<std::string> quota_warnings(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& queues);

/// The per-queue table (Markdown): started and never-started pods, pending time p50 / p95 / max
/// (quota/metrics.hpp: never-started pods count as waiting to the end), GPU-hours used against
/// fair share and deserved, hours over quota, preemptions suffered / caused.
std::string replay_table(const quota::ReplayReport& report);

/// Writes queues.csv, timeline.csv (cluster allocation, fragmentation, and each queue's allocated,
/// fair-share and pending GPUs after every cycle), cluster.svg and queue-<name>.svg (allocated on
/// top of demand, fair share, the quota and the cluster's GPUs, over time) under `dir`, creating
/// it. `other`: a replay of the same workload under other queues (quota tune: the Queue file's
/// and the recommendation's): the plots share its axes, and with `other_is_before` its quota is
/// drawn as the old one.
Status write_replay_files(const std::string& dir, const quota::ReplayReport& report, const quota::ReplayReport* other = nullptr,
                          bool other_is_before = false);

/// Runs the replay and prints the table, or with -o json|yaml its document (and the files above
/// under `out`). Exit code 0, or 2 for
/// bad input with the message on stderr; warnings (rules matching no pod, …) go to stderr too.
int run_quota_replay(const QuotaReplayOptions& options);

/// The Queue objects as read, with the tuned GPU quota and over-quota weight (and scaled CPU /
/// memory quotas) of `recommended` written into spec.resources, and the fields the API server
/// owns (status, resourceVersion, uid, generation, managedFields, creationTimestamp,
/// last-applied annotation) removed: ready for `kubectl apply -f`.
std::vector<nlohmann::json> recommended_queue_objects(const std::vector<nlohmann::json>& objects,
                                                      const std::vector<queues::QueueSpec>& recommended);

/// The tuner's report (Markdown): the objective, the search, the input and top candidates with
/// each queue's quota / weight and the objective's metrics, and what the best one violates.
std::string tune_table(const quota::TuneReport& report);

/// Runs the tuner; prints the report and the recommended Queue objects as YAML, as
/// QuotaTuneOptions::output says (and writes queues.yaml — closest-queues.yaml when the objective
/// is not met —, candidates.csv and the best candidate's replay files under `out`). Exit code 0
/// when the objective is met, 1 when it cannot be (the closest candidate is shown as such, never as
/// a recommendation), 2 for bad input.
int run_quota_tune(const QuotaTuneOptions& options);

}  // namespace fracpack
