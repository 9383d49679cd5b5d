#include "plugin_api/watch_lag.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fracpack/k8s/time.hpp"

namespace fracpack::api {
namespace {

std::optional<std::int64_t> seconds_at(const nlohmann::json& value) {
  return value.is_string() ? k8s::parse_rfc3339(value.get_ref<const std::string&>()) : std::nullopt;
}

}  // namespace

std::optional<std::int64_t> change_time_ms(const ApiEvent& event) {
  const auto metadata = event.object.find("metadata");
  if (metadata == event.object.end() || !metadata->is_object()) return std::nullopt;
  std::optional<std::int64_t> seconds;
  if (event.type == ApiEvent::Type::kAdded) {
    if (auto created = metadata->find("creationTimestamp"); created != metadata->end()) seconds = seconds_at(*created);
  } else if (event.type == ApiEvent::Type::kModified) {
    auto managed = metadata->find("managedFields");
    if (managed == metadata->end() || !managed->is_array()) return std::nullopt;
    for (const auto& entry : *managed) {
      if (!entry.is_object()) continue;
      auto time = entry.find("time");
      if (time == entry.end()) continue;
      if (auto s = seconds_at(*time); s && (!seconds || *s > *seconds)) seconds = s;
    }
  }
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
      "# HELP fracpack_watch_lag_seconds From the API server's change to the ledger applying it, for watch events that carry "
      "their change's time (creations; updates where the API server keeps managedFields). Whole-second timestamps: up to 1 s "
      "more than the true lag.\n# TYPE fracpack_watch_lag_seconds histogram\n";
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
