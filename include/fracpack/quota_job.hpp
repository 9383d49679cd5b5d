// `fracpack quota replay`: the queue replay (quota/replay.hpp) as a command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fracpack/quota/replay.hpp"

namespace fracpack {

struct QuotaReplayOptions {
  std::string nodes;   ///< the trace's node CSV, or Node objects (YAML/JSON)
  std::string queues;  ///< KAI Queue objects (YAML/JSON)
  std::string pods;    ///< the trace's pod CSV, or Pod objects (YAML/JSON; quota/workload.hpp)
  std::string rules;   ///< queue rule file, with a pod CSV only
  std::int64_t period = 1;
  std::string policy = "pack";
  std::string out;     ///< "" or a directory for queues.csv, timeline.csv and queue-<name>.svg
};

/// Warnings about the queues against the cluster: top-level GPU quotas summing above its GPUs.
std::vector<std::string> quota_warnings(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& queues);

/// The per-queue table (Markdown): started and never-started pods, pending time p50 / p95 / max,
/// GPU-hours used against fair share and deserved, hours over quota, preemptions suffered / caused.
std::string replay_table(const quota::ReplayReport& report);

/// Runs the replay and prints the table (and writes queues.csv, timeline.csv — cluster allocation,
/// fragmentation, and each queue's allocated GPUs and fair share after every cycle — cluster.svg,
/// and one SVG per queue, allocated vs fair share vs deserved over time, under `out`). Exit code 0, or 2 for
/// bad input with the message on stderr; warnings (rules matching no pod, …) go to stderr too.
int run_quota_replay(const QuotaReplayOptions& options);

}  // namespace fracpack
