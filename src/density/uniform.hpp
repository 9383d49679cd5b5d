// A uniform draw that is the same on every platform (the standard's distributions are not).
// Internal to src/density/.
#pragma once

#include <cstdint>
#include <random>

namespace fracpack::density {

/// Uniform in [0, n) from a 64-bit engine, by rejection. n > 0.
inline std::size_t uniform(std::mt19937_64& rng, std::size_t n) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = rng();
  while (x >= limit) x = rng();
  return static_cast<std::size_t>(x % n);
}

}  // namespace fracpack::density
