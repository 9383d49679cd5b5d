#include "plugin_api/watch_lag.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fracpack/k8s/time.hpp"

namespace fracpack::api {
std::optional<std::int64_t> change_time_ms(const ApiEvent& event) {
  if (event.type != ApiEvent::Type::kAdded) return std::nullopt;
  const auto metadata = event.object.find("metadata");
  if (metadata == event.object.end() || !metadata->is_object()) return std::nullopt;
  const auto created = metadata->find("creationTimestamp");
  if (created == metadata->end() || !created->is_string()) return std::nullopt;
  const auto seconds = k8s::parse_rfc3339(created->get_ref<const std::string&>());
  if (!seconds) return std::nullopt;
  return *seconds * 1000;
}

void WatchLag::observe(const std::string& kind, const std::vector<ApiEvent>& events, std::chrono::system_clock::time_point applied) {
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(applied.time_since_epoch()).count();
  std::vector<double> samples;
  for (const ApiEvent& e : events) {
    if (auto t = change_time_ms(e)) samples.push_back(static_cast<double>(std::max<std::int64_t>(0, now_ms - *t)) / 1000.0);
  }
  if (samples.empty()) return;
  std::lock_guard lock(mu_);
  Histogram& h = by_kind_[kind];
  for (double s : samples) {
    ++h.count;
    h.sum += s;
    for (std::size_t b = 0; b < kBuckets.size(); ++b) {
      if (s <= kBuckets[b]) ++h.at_most[b];
    }
  }
}

std::string WatchLag::metrics(const std::vector<std::string>& kinds) const {
  std::string out =
      "# HELP fracpack_watch_lag_seconds From an object's creation at the API server to the ledger applying it (watch ADDED "
      "events). Whole-second timestamps: up to 1 s more than the true lag.\n# TYPE fracpack_watch_lag_seconds histogram\n";
  std::lock_guard lock(mu_);
  for (const std::string& kind : kinds) {
    auto it = by_kind_.find(kind);
    const Histogram h = it == by_kind_.end() ? Histogram{} : it->second;
    for (std::size_t b = 0; b < kBuckets.size(); ++b) {
      out += fmt::format("fracpack_watch_lag_seconds_bucket{{kind=\"{}\",le=\"{}\"}} {}\n", kind, kBuckets[b], h.at_most[b]);
    }
    out += fmt::format("fracpack_watch_lag_seconds_bucket{{kind=\"{}\",le=\"+Inf\"}} {}\n", kind, h.count);
    out += fmt::format("fracpack_watch_lag_seconds_sum{{kind=\"{}\"}} {:.3f}\nfracpack_watch_lag_seconds_count{{kind=\"{}\"}} {}\n", kind,
                       h.sum, kind, h.count);
  }
  return out;
}

}  // namespace fracpack::api
