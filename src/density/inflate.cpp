// Workload inflation (the study's simulator: pkg/simulator/simulator.go, tuneUpPods/tuneDownPods).
#include <algorithm>
#include <random>

#include "density/uniform.hpp"
#include "fracpack/sim/density.hpp"

namespace fracpack::density {

std::vector<std::size_t> inflate(const std::vector<trace::TracePod>& pods, std::int64_t capacity_milli, double ratio,
                                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(pods.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform(rng, i)]);  // Fisher–Yates
  if (pods.empty()) return order;
  const double target = ratio * static_cast<double>(capacity_milli);
  double total = 0;
  for (const auto& p : pods) total += static_cast<double>(p.gpu_total().count());
  if (total > target) {
    // Too much demand already: drop drawn pods until it fits the target.
    while (total > target && !order.empty()) {
      const std::size_t k = uniform(rng, order.size());
      total -= static_cast<double>(pods[order[k]].gpu_total().count());
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
    return order;
  }
  if (std::none_of(pods.begin(), pods.end(), [](const auto& p) { return p.gpu_milli.count() > 0; })) return order;
  // The study stops when the next clone's per-GPU share would pass the target (so multi-GPU
  // clones may overshoot a little); CPU-only clones add nothing and never stop it.
  while (true) {
    const std::size_t k = uniform(rng, pods.size());
    if (total + static_cast<double>(pods[k].gpu_milli.count()) > target) break;
    total += static_cast<double>(pods[k].gpu_total().count());
    order.push_back(k);
  }
  return order;
}

}  // namespace fracpack::density
