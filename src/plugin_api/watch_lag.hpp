// The lag between a change at the API server and the ledger applying it (fracpack_watch_lag_seconds),
// for the watch events that carry the time of their own change: objects created, ADDED by a watch
// (never by a list; the reflector watches without selectors, so ADDED is a creation), timed by
// metadata.creationTimestamp. Updates and deletions carry no time of their own change: the newest
// managedFields entry is not it for a Binding (pods/binding writes none), a graceful deletion or a
// kubelet's status write, and would read minutes or hours. Kubernetes timestamps have whole
// seconds, so a sample is the true lag plus up to one second; a negative one (the two clocks
// disagree) counts as 0. Internal to src/plugin_api/.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/server/extender.hpp"

namespace fracpack::api {

/// When the API server made the change `event` reports, in ms since the epoch: an ADDED object's
/// creationTimestamp; nullopt for other events, or a missing or malformed timestamp.
std::optional<std::int64_t> change_time_ms(const ApiEvent& event);

/// Per kind, a Prometheus histogram of the lag, in seconds. Thread-safe.
class WatchLag {
 public:
  static constexpr std::array<double, 8> kBuckets{1, 2, 5, 10, 30, 60, 300, 1800};  ///< upper bounds, s

  /// Samples every event of `events` that carries its change's time, applied at `applied`.
  void observe(const std::string& kind, const std::vector<ApiEvent>& events, std::chrono::system_clock::time_point applied);
  /// fracpack_watch_lag_seconds{kind} as a histogram (_bucket, _sum, _count); every kind that
  /// was asked for in `kinds` appears, with zeros before its first sample.
  [[nodiscard]] std::string metrics(const std::vector<std::string>& kinds) const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> at_most{};  ///< samples ≤ each bound (cumulative)
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Histogram> by_kind_;
};

}  // namespace fracpack::api
