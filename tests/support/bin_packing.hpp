// Exact bin packing of GPU shares for tests: the optimum the LP bounds are checked against.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace fracpack::test {

/// The fewest bins of 1000 that hold `items`, by exhaustive search (small inputs only).
inline int fewest_bins(std::vector<std::int64_t> items) {
  std::sort(items.rbegin(), items.rend());
  int best = static_cast<int>(items.size());
  std::vector<std::int64_t> bins;
  std::function<void(std::size_t)> go = [&](std::size_t i) {
    if (static_cast<int>(bins.size()) >= best) return;
    if (i == items.size()) {
      best = static_cast<int>(bins.size());
      return;
    }
    for (std::size_t b = 0; b < bins.size(); ++b) {  // by index: deeper calls grow `bins`
      if (bins[b] + items[i] <= 1000) {
        bins[b] += items[i];
        go(i + 1);
        bins[b] -= items[i];
      }
    }
    bins.push_back(items[i]);
    go(i + 1);
    bins.pop_back();
  };
  go(0);
  return best;
}

}  // namespace fracpack::test
