#include "fracpack/sim/quota/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace fracpack::quota {

std::optional<std::int64_t> percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p * static_cast<double>(sorted.size()))));
  return sorted[std::min(rank, sorted.size()) - 1];
}

std::string seconds_text(const std::optional<std::int64_t>& seconds, std::string_view none, std::string_view forever) {
  if (!seconds) return std::string(none);
  return *seconds == kWaitsForever ? std::string(forever) : std::to_string(*seconds);
}

ReplayMetrics metrics_of(const ReplayReport& report, std::int64_t cluster_gpus) {
  ReplayMetrics out;
  double total_gpu_hours = 0;
  for (const auto& q : report.queues) total_gpu_hours += q.gpu_hours;
  for (const auto& q : report.queues) {
    QueueMetrics m;
    m.queue = q.queue;
    std::vector<std::int64_t> waits = q.pending_seconds;
    waits.insert(waits.end(), static_cast<std::size_t>(q.never_started - q.never_startable), kWaitsForever);
    std::sort(waits.begin(), waits.end());  // once; each percentile is then one rank
    m.pending_p50 = percentile(waits, 0.50);
    m.pending_p95 = percentile(waits, 0.95);
    m.pending_p99 = percentile(waits, 0.99);
    m.pending_max = percentile(waits, 1.0);
    m.started = q.started;
    m.never_started = q.never_started;
    m.never_startable = q.never_startable;
    m.preemptions = q.preemptions_suffered;
    m.preemptions_caused = q.preemptions_caused;
    m.gpu_hours = q.gpu_hours;
    m.fair_share_gpu_hours = q.fair_share_gpu_hours;
    m.deserved_gpu_hours = q.deserved_gpu_hours;
    m.over_quota_hours = q.over_quota_seconds / 3600.0;
    m.share_pct = total_gpu_hours > 0 ? 100.0 * q.gpu_hours / total_gpu_hours : 0;
    out.queues.push_back(std::move(m));
  }
  const double span_hours = static_cast<double>(report.end - report.start) / 3600.0;
  const double capacity = static_cast<double>(cluster_gpus) * span_hours;
  out.allocation_pct = capacity > 0 ? 100.0 * total_gpu_hours / capacity : 0;
  return out;
}

}  // namespace fracpack::quota
