// Kubernetes timestamps (metav1.Time, RFC 3339) and durations (metav1.Duration).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <optional>
#include <string_view>

namespace fracpack::k8s {

/// "2026-11-29T21:51:42Z" (fractions and ±hh:mm offsets allowed) → seconds since the epoch;
/// nullopt when malformed or when the date does not exist (30 February). No time zone database
/// is needed.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

/// metav1.Duration as JSON carries it, in Go's time.ParseDuration syntax: a sign, then one or
/// more decimal numbers each with a unit ("300ms", "1.5h", "2h45m"; units ns, us, µs, ms, s, m,
/// h), or "0". nullopt when malformed or beyond ±292 years (Go's int64 nanoseconds).
std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view text);

/// metav1.MicroTime as the API server writes it: "2026-12-01T21:30:00.123456Z" (UTC).
std::string format_micro_time(std::chrono::system_clock::time_point t);

}  // namespace fracpack::k8s
