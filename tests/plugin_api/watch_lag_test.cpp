// The watch-lag metric: which events carry the time of their change, and the histogram they fill.
#include <doctest/doctest.h>

#include "plugin_api/watch_lag.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

using fracpack::ApiEvent;
using Clock = std::chrono::system_clock;

// 2026-12-01T17:00:00Z
constexpr std::int64_t kNoonish = 1796144400;

ApiEvent event(ApiEvent::Type type, json metadata) { return ApiEvent{type, json{{"kind", "Pod"}, {"metadata", std::move(metadata)}}}; }

Clock::time_point at(double seconds) {
  return Clock::time_point(std::chrono::milliseconds(static_cast<std::int64_t>((static_cast<double>(kNoonish) + seconds) * 1000)));
}

std::string line_of(const std::string& text, const std::string& start) {
  const auto p = text.find(start);
  if (p == std::string::npos) return "";
  return text.substr(p, text.find('\n', p) - p);
}

TEST_CASE("watch lag: a created object is timed by its creationTimestamp; updates and deletions are not timed") {
  CHECK(api::change_time_ms(event(ApiEvent::Type::kAdded, {{"name", "a"}, {"creationTimestamp", "2026-12-01T17:00:00Z"}})) ==
        kNoonish * 1000);
  // An update's newest managedFields entry is not its change's time (a Binding writes none), and
  // its creationTimestamp is older still: neither is measured; nor is a deletion.
  const json managed = json::array({{{"manager", "kubelet"}, {"time", "2026-12-01T17:00:07Z"}}});
  CHECK_FALSE(api::change_time_ms(event(ApiEvent::Type::kModified,
                                        {{"name", "a"}, {"creationTimestamp", "2026-12-01T16:00:00Z"}, {"managedFields", managed}})));
  CHECK_FALSE(api::change_time_ms(event(ApiEvent::Type::kDeleted, {{"name", "a"}, {"creationTimestamp", "2026-12-01T16:00:00Z"}})));
  // Garbage is not measured, and does not crash.
  CHECK_FALSE(api::change_time_ms(event(ApiEvent::Type::kAdded, {{"name", "a"}, {"creationTimestamp", "yesterday"}})));
  CHECK_FALSE(api::change_time_ms(event(ApiEvent::Type::kAdded, {{"name", "a"}, {"creationTimestamp", 17}})));
  CHECK_FALSE(api::change_time_ms(event(ApiEvent::Type::kAdded, {{"name", "a"}})));
  CHECK_FALSE(api::change_time_ms(ApiEvent{ApiEvent::Type::kAdded, json{{"metadata", "x"}}}));
  CHECK_FALSE(api::change_time_ms(ApiEvent{ApiEvent::Type::kAdded, json::array()}));
}

TEST_CASE("watch lag: samples land in their buckets per kind; clock skew counts as no lag; kinds without samples read zero") {
  api::WatchLag lag;
  std::vector<ApiEvent> pods{event(ApiEvent::Type::kAdded, {{"name", "a"}, {"creationTimestamp", "2026-12-01T17:00:00Z"}}),
                             event(ApiEvent::Type::kAdded, {{"name", "b"}, {"creationTimestamp", "2026-12-01T17:00:04Z"}}),
                             event(ApiEvent::Type::kDeleted, {{"name", "c"}})};
  lag.observe("Pod", pods, at(3.5));  // a: 3.5 s; b: its clock is ahead of ours, 0
  lag.observe("Node", {event(ApiEvent::Type::kAdded, {{"name", "n"}, {"creationTimestamp", "2026-12-01T16:59:00Z"}})}, at(0.5));
  const std::string text = lag.metrics({"Pod", "Node", "Queue"});
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"1\"}") == "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"1\"} 1");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"2\"}") == "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"2\"} 1");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"5\"}") == "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"5\"} 2");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"+Inf\"}") ==
        "fracpack_watch_lag_seconds_bucket{kind=\"Pod\",le=\"+Inf\"} 2");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_sum{kind=\"Pod\"}") == "fracpack_watch_lag_seconds_sum{kind=\"Pod\"} 3.500");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_count{kind=\"Pod\"}") == "fracpack_watch_lag_seconds_count{kind=\"Pod\"} 2");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Node\",le=\"60\"}") ==
        "fracpack_watch_lag_seconds_bucket{kind=\"Node\",le=\"60\"} 0");  // 60.5 s
  CHECK(line_of(text, "fracpack_watch_lag_seconds_bucket{kind=\"Node\",le=\"300\"}") ==
        "fracpack_watch_lag_seconds_bucket{kind=\"Node\",le=\"300\"} 1");
  CHECK(line_of(text, "fracpack_watch_lag_seconds_count{kind=\"Queue\"}") == "fracpack_watch_lag_seconds_count{kind=\"Queue\"} 0");
  CHECK(text.find("# TYPE fracpack_watch_lag_seconds histogram") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
