#include "density/curve.hpp"

#include <cfenv>
#include <cmath>
#include <limits>

namespace fracpack::density {

void CurveBuilder::add(std::int64_t arrived_milli, double value) {
  const double percent = static_cast<double>(arrived_milli) / static_cast<double>(gpus_) / 10.0;
  const double bucket = std::nearbyint(percent);  // default rounding mode: half to even
  if (bucket < 0 || bucket >= kPoints) return;
  const auto b = static_cast<std::size_t>(bucket);
  sum_[b] += std::nearbyint(value * 100.0) / 100.0;
  ++count_[b];
}

std::vector<double> CurveBuilder::points() const {
  std::vector<double> out(kPoints, std::numeric_limits<double>::quiet_NaN());
  for (int x = 0; x < kPoints; ++x) {
    double sum = 0;
    std::int64_t count = 0;
    for (int y = count_[static_cast<std::size_t>(x)] > 0 ? x : x - 1; y <= (count_[static_cast<std::size_t>(x)] > 0 ? x : x + 1); ++y) {
      if (y < 0 || y >= kPoints) continue;
      sum += sum_[static_cast<std::size_t>(y)];
      count += count_[static_cast<std::size_t>(y)];
    }
    if (count > 0) out[static_cast<std::size_t>(x)] = sum / static_cast<double>(count);
  }
  return out;
}

}  // namespace fracpack::density
