#include "fracpack/core/quantity.hpp"

#include <array>
#include <limits>
#include <optional>

#include "fracpack/core/quoting.hpp"

namespace fracpack {
namespace {

constexpr int kMaxMantissaDigits = 30;  // keeps every intermediate below 2^127
constexpr int kMaxExponent = 1000;      // beyond this every value overflows or rounds to one step
constexpr Int128 kInt64Max = std::numeric_limits<std::int64_t>::max();

struct Suffix {
  std::string_view text;
  int exp10;
  int exp2;
};

constexpr std::array<Suffix, 16> kSuffixes{{
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"", 0, 0}, {"k", 3, 0}, {"M", 6, 0},
    {"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0},
}};

Status bad(std::string_view text, std::string_view what, std::string_view why) {
  return invalid_argument("invalid quantity \"{}\" in {}: {}", excerpt(text), what, why);
}

/// A hint for the common misspellings: "GB" → "G or Gi", "GiB" → "Gi", "gi" → "Gi".
std::string suffix_hint(std::string_view suffix) {
  static constexpr std::string_view kValid =
      "binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E, or an exponent such as e3";
  const auto known = [](std::string_view s) {
    for (const auto& k : kSuffixes) {
      if (!s.empty() && k.text == s) return true;
    }
    return false;
  };
  if (suffix.size() >= 2 && (suffix.back() == 'B' || suffix.back() == 'b')) {
    std::string_view stem = suffix.substr(0, suffix.size() - 1);
    if (known(stem) && stem.size() == 1 && known(std::string(stem) + "i")) {
      return fmt::format("unknown suffix \"{}\" (Kubernetes writes {} for powers of 1000 or {}i for powers of 1024; "
                         "valid: {})", suffix, stem, stem, kValid);
    }
    if (known(stem)) return fmt::format("unknown suffix \"{}\" (did you mean \"{}\"? valid: {})", suffix, stem, kValid);
  }
  if (suffix.size() == 2 && suffix[1] == 'i' && suffix[0] >= 'a' && suffix[0] <= 'z') {
    const std::string upper{static_cast<char>(suffix[0] - 'a' + 'A'), 'i'};
    if (known(upper)) {
      return fmt::format("unknown suffix \"{}\" (suffixes are case-sensitive: did you mean \"{}\"? valid: {})", suffix,
                         upper, kValid);
    }
  }
  // "1e30Gi": an exponent and a suffix together. Kubernetes takes one or the other.
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::size_t digits = 1;
    if (digits < suffix.size() && (suffix[digits] == '+' || suffix[digits] == '-')) ++digits;
    const std::size_t first_digit = digits;
    while (digits < suffix.size() && suffix[digits] >= '0' && suffix[digits] <= '9') ++digits;
    if (digits > first_digit && digits < suffix.size()) {
      return fmt::format("unknown suffix \"{}\" (an exponent \"{}\" and a suffix \"{}\" together; Kubernetes takes one "
                         "or the other, e.g. 16Gi or 16e9)", excerpt(suffix), excerpt(suffix.substr(0, digits)), excerpt(suffix.substr(digits)));
    }
  }
  return fmt::format("unknown suffix \"{}\" (valid: {})", excerpt(suffix), kValid);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Parses an exponent "[+-]digits" (the text after e/E); nullopt when malformed.
std::optional<int> parse_exponent(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool neg = false;
  std::size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return std::nullopt;
  long value = 0;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) return std::nullopt;
    value = value * 10 + (s[i] - '0');
    if (value > kMaxExponent) value = kMaxExponent + 1;  // saturate; overflow is reported later
  }
  return static_cast<int>(neg ? -value : value);
}

}  // namespace

Result<Quantity> parse_quantity(std::string_view text, std::string_view what) {
  if (text.empty()) return bad(text, what, "the value is empty");
  Quantity q;
  std::size_t i = 0;
  if (text[0] == '+' || text[0] == '-') {
    q.negative = text[0] == '-';
    i = 1;
  }
  // Number: digits [. digits]; at least one digit overall.
  std::size_t digits_seen = 0;
  int significant = 0;
  int frac_digits = 0;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      if (in_fraction) return bad(text, what, "the number has two decimal points");
      in_fraction = true;
      continue;
    }
    if (!is_digit(c)) break;
    ++digits_seen;
    if (q.mantissa == 0 && c == '0') {
      if (in_fraction) ++frac_digits;
      continue;  // leading zeros carry no precision
    }
    if (significant == kMaxMantissaDigits) {
      // Extra precision: integer digits scale the value up, fraction digits only round it.
      if (c != '0') {
        return bad(text, what, in_fraction ? "more than 30 significant digits"
                                           : "the value does not fit in a 64-bit count (overflow)");
      }
      if (!in_fraction) ++q.exp10;  // a trailing integer zero scales; a fraction zero is nothing
      continue;
    }
    q.mantissa = q.mantissa * 10 + (c - '0');
    ++significant;
    if (in_fraction) ++frac_digits;
  }
  if (digits_seen == 0) return bad(text, what, "it does not start with a number");
  q.exp10 -= frac_digits;

  std::string_view suffix = text.substr(i);
  std::optional<int> exponent;
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) exponent = parse_exponent(suffix.substr(1));
  if (exponent) {
    q.exp10 += *exponent;
  } else {
    const Suffix* found = nullptr;
    for (const auto& s : kSuffixes) {
      if (s.text == suffix) found = &s;
    }
    if (found == nullptr) return bad(text, what, suffix_hint(suffix));
    q.exp10 += found->exp10;
    q.exp2 = found->exp2;
  }
  if (q.mantissa == 0) q.negative = false;  // "-0" is zero
  return q;
}

Result<std::int64_t> scaled_value_ceil(const Quantity& q, int scale10, std::string_view text,
                                       std::string_view what) {
  const auto overflow = [&] {
    return bad(text, what, "the value does not fit in a 64-bit count (overflow)");
  };
  if (q.mantissa == 0) return std::int64_t{0};
  const int e = q.exp10 + scale10;
  Int128 acc = 0;
  if (e >= 0) {
    if (e > 40) return overflow();
    acc = q.mantissa;
    if (acc > kInt64Max) return overflow();
    for (int k = 0; k < e; ++k) {
      acc *= 10;
      if (acc > kInt64Max) return overflow();
    }
    for (int k = 0; k < q.exp2; ++k) {
      acc *= 2;
      if (acc > kInt64Max) return overflow();
    }
  } else if (-e > 37) {
    acc = 1;  // mantissa < 10^30, times at most 2^60, over 10^38: a positive value below one step
  } else {
    Int128 divisor = 1;
    for (int k = 0; k < -e; ++k) divisor *= 10;
    acc = q.mantissa / divisor;
    Int128 rem = q.mantissa % divisor;
    if (acc > kInt64Max) return overflow();
    for (int k = 0; k < q.exp2; ++k) {  // multiply acc + rem/divisor by 2, keeping rem < divisor
      acc *= 2;
      rem *= 2;
      if (rem >= divisor) {
        acc += 1;
        rem -= divisor;
      }
      if (acc > kInt64Max) return overflow();
    }
    if (rem > 0) {
      acc += 1;  // round up, away from zero
      if (acc > kInt64Max) return overflow();
    }
  }
  auto v = static_cast<std::int64_t>(acc);
  return q.negative ? -v : v;
}

namespace {

Result<std::int64_t> non_negative(std::string_view text, std::string_view what, int scale10) {
  auto q = parse_quantity(text, what);
  if (!q) return q.status();
  if (q->negative) return bad(text, what, "a negative amount is not allowed here");
  return scaled_value_ceil(*q, scale10, text, what);
}

}  // namespace

Result<Bytes> parse_bytes(std::string_view text, std::string_view what) {
  auto v = non_negative(text, what, 0);
  if (!v) return v.status();
  return Bytes(*v);
}

Result<MilliCpu> parse_milli_cpu(std::string_view text, std::string_view what) {
  auto v = non_negative(text, what, 3);
  if (!v) return v.status();
  return MilliCpu(*v);
}

Result<std::int64_t> parse_count(std::string_view text, std::string_view what) {
  auto q = parse_quantity(text, what);
  if (!q) return q.status();
  if (q->negative) return bad(text, what, "a negative amount is not allowed here");
  // Whole when no fraction survives: 2^k, or 10^e with e ≥ 0, or a mantissa divisible by 10^-e.
  bool whole = q->exp10 >= 0;
  if (!whole && -q->exp10 <= 30) {
    Int128 divisor = 1;
    for (int k = 0; k < -q->exp10; ++k) divisor *= 10;
    whole = q->mantissa % divisor == 0;
  }
  if (!whole && q->mantissa != 0) return bad(text, what, "this resource must be a whole number");
  return scaled_value_ceil(*q, 0, text, what);
}

Result<MiB> parse_mib_or_quantity(std::string_view text, std::string_view what) {
  auto q = parse_quantity(text, what);
  if (!q) return q.status();
  if (q->negative) return bad(text, what, "a negative amount is not allowed here");
  const char last = text.empty() ? ' ' : text.back();
  const bool unitless = (last >= '0' && last <= '9') || last == '.';
  if (unitless) q->exp2 += 20;  // a plain number is MiB
  auto bytes = scaled_value_ceil(*q, 0, text, what);
  if (!bytes) return bytes.status();
  return to_mib_ceil(Bytes(*bytes));
}

}  // namespace fracpack
