// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource/quantity.go), exactly.
//
// Grammar:  [+-] <digits>[.<digits>] <suffix>      (".5" and "5." are numbers too)
//   binary suffixes   Ki Mi Gi Ti Pi Ei          (2^10 ... 2^60)
//   decimal suffixes  n u m "" k M G T P E        (10^-9 ... 10^18)
//   exponents         e<int> | E<int>             ("1e3", "12E6", "1.5e-3"; a bare "E" is exa)
// Conversions round up (away from zero) to the unit asked for, like Quantity.Value() and
// Quantity.MilliValue(): "1.5Ki" bytes = 1536, "0.1m" CPU = 1m, "1n" bytes = 1.
//
// Errors (Code::kInvalidArgument) name the value and where it came from (`what`, e.g.
// `annotation "nvidia.com/container.main.gpu-memory.request" of pod team-a/llm`): empty text,
// an unknown suffix ("16GB", "16gi", with a hint at the right spelling), a malformed number,
// a negative value where it is not allowed, a fraction where a whole number is required, and
// any value that does not fit in a signed 64-bit count of the target unit (overflow).
#pragma once

#include <cstdint>
#include <string_view>

#include "fracpack/core/status.hpp"
#include "fracpack/core/units.hpp"

namespace fracpack {

__extension__ using Int128 = __int128;  // GCC/Clang extension, spelled once

/// An exact parsed quantity: sign × mantissa × 10^exp10 × 2^exp2 (mantissa < 10^30).
struct Quantity {
  bool negative = false;
  Int128 mantissa = 0;
  int exp10 = 0;
  int exp2 = 0;
};

/// Parses `text` with Kubernetes' grammar. `what` names the source for error messages.
Result<Quantity> parse_quantity(std::string_view text, std::string_view what);

/// The quantity in units of 10^-`scale10` (0 = whole units, 3 = milli), rounded up away from zero.
/// kInvalidArgument on int64 overflow.
Result<std::int64_t> scaled_value_ceil(const Quantity& q, int scale10, std::string_view text,
                                       std::string_view what);

/// A non-negative memory-like quantity in bytes ("16Gi", "24000Mi", "20G").
Result<Bytes> parse_bytes(std::string_view text, std::string_view what);

/// A non-negative CPU quantity in millicores ("250m", "2", "0.5").
Result<MilliCpu> parse_milli_cpu(std::string_view text, std::string_view what);

/// A non-negative whole count ("1", "8", "2k"); a fraction ("0.5") is an error. Used for extended
/// resources such as `nvidia.com/gpu` and `rdma/ib`, which Kubernetes requires to be integers.
Result<std::int64_t> parse_count(std::string_view text, std::string_view what);

/// A memory size given on a command line: a quantity with a unit ("2Gi", "500M"), or a plain
/// number of MiB ("2000", "1.5", "2e3").
Result<MiB> parse_mib_or_quantity(std::string_view text, std::string_view what);

}  // namespace fracpack
