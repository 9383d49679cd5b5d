#include "fracpack/k8s/time.hpp"

#include <charconv>
#include <cstdint>
#include <ctime>

#include <fmt/format.h>

namespace fracpack::k8s {

std::optional<std::int64_t> parse_rfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
    int v = 0;
    auto [p, ec] = std::from_chars(t.data() + pos, t.data() + pos + len, v);
    if (ec != std::errc() || p != t.data() + pos + len) return std::nullopt;
    return v;
  };
  auto year = num(0, 4), month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2), second = num(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 || *day < 1 || *day > 31 ||
      *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  // No 30 February: the day must exist in its month.
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*day > kDays[*month - 1] + (*month == 2 && leap ? 1 : 0)) return std::nullopt;
  std::size_t pos = 19;
  if (pos < t.size() && t[pos] == '.') {
    ++pos;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') ++pos;
  }
  std::int64_t offset = 0;
  if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) {
    ++pos;
  } else if (pos + 6 == t.size() && (t[pos] == '+' || t[pos] == '-') && t[pos + 3] == ':') {
    auto oh = num(pos + 1, 2), om = num(pos + 4, 2);
    if (!oh || !om) return std::nullopt;
    offset = (t[pos] == '-' ? -1 : 1) * (*oh * 3600 + *om * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;
  // Days from civil (Howard Hinnant's algorithm), no time zone database needed.
  const int y = *year - (*month <= 2 ? 1 : 0);
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int mp = (*month + 9) % 12;
  const int doy = (153 * mp + 2) / 5 + *day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
  return days * 86400 + *hour * 3600 + *minute * 60 + *second - offset;
}

namespace {

/// Nanoseconds per unit of a Go duration, or 0 when `unit` is none of Go's.
std::uint64_t go_unit(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") return 1'000;  // µ: micro sign or Greek mu, as Go
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view t) {
  bool negative = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  if (t == "0") return std::chrono::nanoseconds(0);
  if (t.empty()) return std::nullopt;
  constexpr std::uint64_t kMost = static_cast<std::uint64_t>(INT64_MAX) + 1;  // -9223372036854775808ns is valid
  std::uint64_t total = 0;
  while (!t.empty()) {
    std::uint64_t whole = 0;
    std::size_t i = 0;
    for (; i < t.size() && is_digit(t[i]); ++i) {
      if (whole > (kMost - static_cast<std::uint64_t>(t[i] - '0')) / 10) return std::nullopt;
      whole = whole * 10 + static_cast<std::uint64_t>(t[i] - '0');
    }
    const std::size_t whole_digits = i;
    // The fraction as Go's leadingFraction reads it: digits past 63 bits are dropped.
    std::uint64_t fraction = 0;
    double scale = 1;
    if (i < t.size() && t[i] == '.') {
      bool overflow = false;
      for (++i; i < t.size() && is_digit(t[i]); ++i) {
        if (overflow) continue;
        if (fraction > static_cast<std::uint64_t>(INT64_MAX) / 10) {
          overflow = true;
          continue;
        }
        const std::uint64_t next = fraction * 10 + static_cast<std::uint64_t>(t[i] - '0');
        if (next > kMost) {
          overflow = true;
          continue;
        }
        fraction = next;
        scale *= 10;
      }
    }
    if (i == 0 || (i == 1 && whole_digits == 0)) return std::nullopt;  // no digits: "s", ".s"
    std::size_t u = i;
    while (u < t.size() && t[u] != '.' && !is_digit(t[u])) ++u;
    const std::uint64_t unit = go_unit(t.substr(i, u - i));
    if (unit == 0) return std::nullopt;  // missing or unknown unit
    if (whole > kMost / unit) return std::nullopt;
    std::uint64_t part = whole * unit;
    if (fraction > 0) part += static_cast<std::uint64_t>(static_cast<double>(fraction) * (static_cast<double>(unit) / scale));
    if (part > kMost || part > kMost - total) return std::nullopt;
    total += part;
    t.remove_prefix(u);
  }
  if (!negative && total == kMost) return std::nullopt;
  return std::chrono::nanoseconds(negative ? static_cast<std::int64_t>(0 - total) : static_cast<std::int64_t>(total));
}

std::string format_micro_time(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                     utc.tm_min, utc.tm_sec, micros % 1'000'000);
}

}  // namespace fracpack::k8s
