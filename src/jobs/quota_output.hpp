// `quota replay` and `quota tune` outputs for machines (-o json|yaml) and the per-queue
// before → after table that every tune report carries.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/sim/quota/metrics.hpp"
#include "fracpack/sim/quota/replay.hpp"
#include "fracpack/sim/quota/tune.hpp"

namespace fracpack {

/// One queue's metrics; pending times in seconds, null without a pod to measure, "never" for a
/// queue with a pod that could run and never started (quota/metrics.hpp kWaitsForever).
nlohmann::ordered_json queue_metrics_json(const quota::QueueMetrics& q);

/// The replay as a document: span, events, cycles, the cluster's allocation and every queue's
/// metrics with its longest wait. The table's numbers, unrounded.
nlohmann::ordered_json replay_json(const quota::ReplayReport& report);

/// The search as a document: the objective, whether it is met, every candidate shown (settings,
/// metrics, why it misses) and, only when the objective is met, the recommended Queue objects.
nlohmann::ordered_json tune_json(const quota::TuneReport& report, const std::vector<nlohmann::json>& recommended_objects);

/// Each shown candidate's every metric per queue as "Queue file → candidate" (Markdown): the side
/// effects the objective does not name (another queue's p99, its over-quota hours).
std::string before_after_table(const quota::TuneReport& report);

/// `document` as "json" (indented, keys in order) or "yaml" text (keys sorted, as place's).
std::string document_text(const nlohmann::ordered_json& document, std::string_view format);

/// quota tune's progress line, redrawn after each round on a terminal: "round 3 of 10: 120
/// candidates replayed (8.1/s), best so far met; ETA at most 1m20s". The ETA is what is left of the
/// budget (`budget_seconds` > 0) or of `max_rounds` at this pace (> 0), the sooner of the two;
/// none with neither.
std::string tune_progress_line(std::size_t round, std::size_t replayed, const quota::Candidate& best, double seconds,
                               double budget_seconds, std::size_t max_rounds);

}  // namespace fracpack
