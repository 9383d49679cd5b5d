#include "fracpack/core/units.hpp"

#include <type_traits>

#include <doctest/doctest.h>

namespace fracpack {
namespace {

template <class A, class B>
concept Addable = requires(A a, B b) { a + b; };
template <class A, class B>
concept Multipliable = requires(A a, B b) { a * b; };

TEST_CASE("units do not mix") {
  static_assert(Addable<MiB, MiB>);
  static_assert(!Addable<MiB, Bytes>);
  static_assert(!Addable<MilliGpu, MilliCpu>);
  static_assert(!Multipliable<MiB, MiB>);
  static_assert(Multipliable<MiB, std::int64_t>);
  static_assert(!std::is_convertible_v<std::int64_t, MiB>);
  CHECK(MiB(3) + MiB(4) == MiB(7));
}

TEST_CASE("conversions round as written") {
  CHECK(to_mib_ceil(Bytes(1)) == MiB(1));
  CHECK(to_mib_ceil(Bytes(kBytesPerMiB)) == MiB(1));
  CHECK(to_mib_ceil(Bytes(kBytesPerMiB + 1)) == MiB(2));
  CHECK(to_bytes(MiB(2)) == Bytes(2 * kBytesPerMiB));
  CHECK(portion_of(MilliGpu(500), MiB(143700)) == MiB(71850));
  CHECK(portion_of(MilliGpu(333), MiB(1000)) == MiB(333));
  CHECK(portion_of(MilliGpu(1), MiB(1001)) == MiB(2));  // 1.001 → 2
}

TEST_CASE("fmt renders the unit") {
  CHECK(fmt::format("{}", MiB(16384)) == "16384 MiB");
  CHECK(fmt::format("{}", MilliCpu(250)) == "250m CPU");
  CHECK(fmt::format("{}", MilliGpu(500)) == "500 mGPU");
  CHECK(fmt::format("{}", Bytes(3)) == "3 B");
}

}  // namespace
}  // namespace fracpack
