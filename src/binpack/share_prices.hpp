// What a GPU share is worth to the workload: the dual prices of the cutting-stock LP over the
// workload's single-GPU shares. Internal to src/binpack/.
//
// Packing fractional pods onto GPUs is bin packing with GPUs as bins of 1000 milli-GPU. Its LP
// relaxation (Gilmore & Gomory, "A linear programming approach to the cutting-stock problem",
// Operations Research 9(6), 1961) chooses how many GPUs to fill with each pattern (a multiset of
// shares summing to ≤ 1000) so that the workload's demand is met with the fewest GPUs. Its dual
// gives every share s a price y(s) ≥ 0, in GPUs, with Σ y ≤ 1 on every pattern and = 1 on the
// patterns an optimal packing uses. best(h) = the most a free space of h milli-GPU can still earn
// (knapsack over the prices); regret(h, s) = best(h) − best(h − s) − y(s) ≥ 0 is how much a GPU's
// free space loses, in GPUs of the LP optimum, when s takes h of it: 0 when the GPU can still be
// completed into an optimal pattern.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/packing_bound.hpp"

namespace fracpack::binpack {

/// The cutting-stock LP's dual prices for items of `sizes` (milli, each in (0, capacity]) with
/// `demand` copies each (any positive scale), bins of `capacity`. Column generation with an
/// unbounded-knapsack pricing step; the result is always dual-feasible (scaled so the best
/// pattern is worth exactly 1). Same inputs, same prices. Empty sizes: empty result.
std::vector<double> cutting_stock_prices(const std::vector<std::int64_t>& sizes, const std::vector<double>& demand,
                                         std::int64_t capacity);


class SharePrices {
 public:
  /// Prices of the workload's single-GPU fractional shapes (milli < 1000), demand = popularity.
  /// More than 64 distinct shares are priced in steps of 10 milli-GPU (rounded down), so a workload
  /// of any shape is priced in well under a second (0.35 s for all 999 sizes here).
  explicit SharePrices(const std::vector<TypicalPod>& workload);

  /// y(s) of a typical share (when coarse, of its 10-milli step); for any other share, best(s)
  /// (what its space would earn). Never above best(s).
  [[nodiscard]] double price(std::int64_t milli) const;
  /// The most `free_milli` of one GPU can earn from the typical shares (0 … 1; best(1000) = 1).
  [[nodiscard]] double best(std::int64_t free_milli) const;
  /// best(h) − best(h − s) − price(s): what the GPU loses when a share of `milli` takes `free_milli`
  /// of it (h ≥ s). 0 when the workload has no fractional shapes.
  [[nodiscard]] double regret(std::int64_t free_milli, std::int64_t milli) const;

 private:
  bool coarse_ = false;  // more than 64 distinct shares: priced in steps of 10 milli-GPU
  std::map<std::int64_t, double> price_;
  std::vector<double> best_;  // index: free milli-GPU, 0 … 1000
};

}  // namespace fracpack::binpack
