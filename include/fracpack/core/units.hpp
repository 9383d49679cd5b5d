// Strong unit types: a quantity's unit is part of its type, never a comment.
//
// Every unit is a 64-bit signed integer count of its smallest step (fixed point, never a double),
// following Ray's scheduling resources (src/ray/common/scheduling/fixed_point.h). Converting from a
// double happens once, at the edge (request decoding), with the rounding written down there.
//
//   Bytes     one byte                      (Kubernetes memory quantities, rounded up like Quantity.Value())
//   MiB       2^20 bytes                    (GPU memory: the `nvidia.com/gpu.memory` label, KAI's gpu-memory)
//   MilliGpu  1/1000 of one GPU device      (1000 = one whole device; KAI gpu-fraction 0.5 = 500)
//   MilliCpu  1/1000 of one CPU core        (Kubernetes `cpu: 250m` = 250)
//
// Same-unit arithmetic (+, -, comparison) and scaling by a plain integer are allowed; mixing units
// (MiB + Bytes, MiB * MiB) does not compile. Conversions are named functions.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace fracpack {

template <class Tag>
class Unit {
 public:
  using rep = std::int64_t;

  constexpr Unit() = default;
  constexpr explicit Unit(rep count) : count_(count) {}

  [[nodiscard]] constexpr rep count() const { return count_; }

  constexpr auto operator<=>(const Unit&) const = default;

  constexpr Unit& operator+=(Unit other) {
    count_ += other.count_;
    return *this;
  }
  constexpr Unit& operator-=(Unit other) {
    count_ -= other.count_;
    return *this;
  }
  friend constexpr Unit operator+(Unit a, Unit b) { return Unit(a.count_ + b.count_); }
  friend constexpr Unit operator-(Unit a, Unit b) { return Unit(a.count_ - b.count_); }
  friend constexpr Unit operator-(Unit a) { return Unit(-a.count_); }
  friend constexpr Unit operator*(Unit a, rep k) { return Unit(a.count_ * k); }
  friend constexpr Unit operator*(rep k, Unit a) { return Unit(a.count_ * k); }

 private:
  rep count_ = 0;
};

struct BytesTag {};
struct MiBTag {};
struct MilliGpuTag {};
struct MilliCpuTag {};

using Bytes = Unit<BytesTag>;
using MiB = Unit<MiBTag>;
using MilliGpu = Unit<MilliGpuTag>;
using MilliCpu = Unit<MilliCpuTag>;

inline constexpr std::int64_t kBytesPerMiB = 1024 * 1024;
inline constexpr MilliGpu kOneGpu{1000};

/// Whole MiB in `b`, rounded up (a request of 1 byte needs 1 MiB of GPU memory). Never overflows.
constexpr MiB to_mib_ceil(Bytes b) {
  return MiB(b.count() / kBytesPerMiB + (b.count() % kBytesPerMiB > 0 ? 1 : 0));
}

/// a + b, pinned to the int64 range instead of wrapping (sums of absurd requests then fit nowhere).
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
/// Exact bytes in `m`.
constexpr Bytes to_bytes(MiB m) { return Bytes(m.count() * kBytesPerMiB); }

/// `portion` of a device with `memory`, rounded up to whole MiB (KAI gpu-fraction on a given GPU).
constexpr MiB portion_of(MilliGpu portion, MiB memory) {
  return MiB((portion.count() * memory.count() + 999) / 1000);
}

/// fmt rendering, e.g. "16384 MiB", "250m CPU", "500 mGPU", "1073741824 B".
std::string format_as(Bytes v);
std::string format_as(MiB v);
std::string format_as(MilliGpu v);
std::string format_as(MilliCpu v);

}  // namespace fracpack

// fmt 9 only honours format_as for enums; this forwards every Unit to its format_as.
template <class Tag>
struct fmt::formatter<fracpack::Unit<Tag>> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(fracpack::Unit<Tag> v, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(format_as(v), ctx);
  }
};
