#include "jobs/quota_output.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "fracpack/core/progress.hpp"
#include "fracpack/k8s/yaml_emit.hpp"
#include "fracpack/sim/quota/objective.hpp"

namespace fracpack {
namespace {

using nlohmann::ordered_json;

ordered_json pending(const std::optional<std::int64_t>& s) {
  if (!s) return nullptr;
  if (*s == quota::kWaitsForever) return "never";
  return *s;
}

double rounded(double v) { return std::round(v * 1000.0) / 1000.0; }

ordered_json settings_json(const quota::TuneReport& report, const quota::Candidate& c) {
  ordered_json out = ordered_json::object();
  for (std::size_t k = 0; k < c.settings.size() && k < report.objective.queues.size(); ++k) {
    const auto& s = c.settings[k];
    out[report.objective.queues[k]] = {
        {"gpuQuota", s.gpu_quota == queues::kUnlimited ? -1.0 : static_cast<double>(s.gpu_quota) / 1000.0},
        {"gpuOverQuotaWeight", static_cast<double>(s.gpu_weight) / 1000.0}};
  }
  return out;
}

ordered_json candidate_json(const quota::TuneReport& report, const quota::Candidate& c) {
  ordered_json queues_out = ordered_json::array();
  for (const auto& q : c.metrics.queues) queues_out.push_back(queue_metrics_json(q));
  ordered_json out = {{"origin", c.origin},
                      {"meetsObjective", c.score.feasible() && c.not_allowed.empty()},
                      {"settings", settings_json(report, c)},
                      {"allocationPct", rounded(c.metrics.allocation_pct)},
                      {"queues", std::move(queues_out)}};
  if (!c.score.feasible()) out["violations"] = quota::violations(report.objective, c.metrics);
  if (!c.not_allowed.empty()) out["notAllowed"] = c.not_allowed;
  return out;
}

std::string hours(double v) { return fmt::format("{:.1f}", v); }
std::string wait(const std::optional<std::int64_t>& s) { return quota::seconds_text(s, "—", "never"); }

/// "a → b", or "a" alone when nothing changed.
std::string change(const std::string& before, const std::string& after) {
  return before == after ? before : fmt::format("{} → {}", before, after);
}

}  // namespace

ordered_json queue_metrics_json(const quota::QueueMetrics& q) {
  return {{"queue", q.queue},
          {"started", q.started},
          {"neverStarted", q.never_started},
          {"neverStartable", q.never_startable},
          {"pendingSeconds", {{"p50", pending(q.pending_p50)}, {"p95", pending(q.pending_p95)},
                              {"p99", pending(q.pending_p99)}, {"max", pending(q.pending_max)}}},
          {"gpuHours", rounded(q.gpu_hours)},
          {"fairShareGpuHours", rounded(q.fair_share_gpu_hours)},
          {"deservedGpuHours", rounded(q.deserved_gpu_hours)},
          {"overQuotaHours", rounded(q.over_quota_hours)},
          {"gpuHoursSharePct", rounded(q.share_pct)},
          {"preemptionsSuffered", q.preemptions},
          {"preemptionsCaused", q.preemptions_caused}};
}

ordered_json replay_json(const quota::ReplayReport& report) {
  const auto metrics = quota::metrics_of(report, 0);
  ordered_json queues_out = ordered_json::array();
  for (std::size_t k = 0; k < metrics.queues.size(); ++k) {
    ordered_json q = queue_metrics_json(metrics.queues[k]);
    if (k < report.deserved.size() && std::isnan(report.deserved[k])) q["deservedGpuHours"] = "unlimited";
    if (k < report.queues.size() && (report.queues[k].moved > 0 || report.queues[k].consolidated > 0)) {
      q["consolidation"] = {{"moved", report.queues[k].moved}, {"startedByMoves", report.queues[k].consolidated}};
    }
    if (k < report.queues.size() && !report.queues[k].longest_wait.pod.empty()) {
      const auto& w = report.queues[k].longest_wait;
      q["longestWait"] = {{"pod", w.pod}, {"seconds", pending(w.seconds)}, {"why", w.why}};
    }
    queues_out.push_back(std::move(q));
  }
  return {{"kind", "QuotaReplay"},
          {"spanSeconds", report.end - report.start},
          {"events", report.events},
          {"cycles", report.cycles},
          {"moves", report.moves},
          {"queues", std::move(queues_out)}};
}

ordered_json tune_json(const quota::TuneReport& report, const std::vector<nlohmann::json>& recommended_objects) {
  const bool met = report.candidates.front().score.feasible();
  ordered_json candidates = ordered_json::array();
  const std::size_t shown = std::min(report.candidates.size(), report.shown);
  for (std::size_t k = 0; k < shown; ++k) candidates.push_back(candidate_json(report, report.candidates[k]));
  ordered_json out = {{"kind", "QuotaTune"},
                      {"objective", report.objective.text},
                      {"met", met},
                      {"evaluated", report.evaluated},
                      {"rounds", report.rounds},
                      {"converged", report.converged},
                      {"clusterGpus", report.cluster_gpus},
                      {"input", candidate_json(report, report.input)},
                      {"candidates", std::move(candidates)}};
  if (met) {
    ordered_json objects = ordered_json::array();
    for (const auto& o : recommended_objects) objects.push_back(ordered_json::parse(o.dump()));
    out["recommended"] = std::move(objects);
  }
  return out;
}

std::string before_after_table(const quota::TuneReport& report) {
  std::string out =
      "Every metric per queue, the Queue file → each candidate:\n\n"
      "| candidate | queue | pending p50 / p95 / p99 / max (s) | never started | GPU-hours share (%) | hours over quota | "
      "preemptions suffered / caused |\n|---|---|---:|---:|---:|---:|---:|\n";
  const auto& before = report.input.metrics.queues;
  const std::size_t shown = std::min(report.candidates.size(), report.shown);
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& after = report.candidates[k].metrics.queues;
    for (std::size_t q = 0; q < after.size() && q < before.size(); ++q) {
      const auto& b = before[q];
      const auto& a = after[q];
      out += fmt::format(
          "| {} | {} | {} / {} / {} / {} | {} | {} | {} | {} |\n", k + 1, a.queue, change(wait(b.pending_p50), wait(a.pending_p50)),
          change(wait(b.pending_p95), wait(a.pending_p95)), change(wait(b.pending_p99), wait(a.pending_p99)),
          change(wait(b.pending_max), wait(a.pending_max)),
          change(std::to_string(b.never_started), std::to_string(a.never_started)),
          change(hours(b.share_pct), hours(a.share_pct)), change(hours(b.over_quota_hours), hours(a.over_quota_hours)),
          change(fmt::format("{} / {}", b.preemptions, b.preemptions_caused), fmt::format("{} / {}", a.preemptions, a.preemptions_caused)));
    }
  }
  return out;
}

std::string document_text(const ordered_json& document, std::string_view format) {
  const std::string json_text = document.dump(2, ' ', false, ordered_json::error_handler_t::replace);
  if (format == "json") return json_text + "\n";
  return k8s::to_yaml({nlohmann::json::parse(json_text)});  // through the text, as place's YAML: UTF-8 assured
}

std::string tune_progress_line(std::size_t round, std::size_t replayed, const quota::Candidate& best, double seconds,
                               double budget_seconds, std::size_t max_rounds) {
  const std::string state = best.score.feasible() ? "met" : fmt::format("violation {:.3g}", best.score.violation);
  std::string line = max_rounds > 0 ? fmt::format("round {} of {}", round, max_rounds) : fmt::format("round {}", round);
  line += fmt::format(": {} candidates replayed", replayed);
  if (seconds > 0) line += fmt::format(" ({:.1f}/s)", static_cast<double>(replayed) / seconds);
  line += fmt::format(", best so far {}", state);
  std::optional<double> left;
  if (budget_seconds > 0) left = std::max(0.0, budget_seconds - seconds);
  if (max_rounds > 0 && round > 0) {
    const double by_rounds = seconds / static_cast<double>(round) * static_cast<double>(max_rounds > round ? max_rounds - round : 0);
    left = left ? std::min(*left, by_rounds) : by_rounds;
  }
  if (left) line += fmt::format("; ETA at most {}", human_duration(*left));
  return line;
}

}  // namespace fracpack
