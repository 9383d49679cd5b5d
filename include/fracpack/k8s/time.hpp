// Kubernetes timestamps (metav1.Time, RFC 3339).
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

/// metav1.MicroTime as the API server writes it: "2026-12-01T21:30:00.123456Z" (UTC).
std::string format_micro_time(std::chrono::system_clock::time_point t);

}  // namespace fracpack::k8s
