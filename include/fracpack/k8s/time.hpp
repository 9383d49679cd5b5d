// Kubernetes timestamps (metav1.Time, RFC 3339).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fracpack::k8s {

/// "2026-11-29T21:51:42Z" (fractions and ±hh:mm offsets allowed) → seconds since the epoch;
/// nullopt when malformed or when the date does not exist (30 February). No time zone database
/// is needed.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

}  // namespace fracpack::k8s
