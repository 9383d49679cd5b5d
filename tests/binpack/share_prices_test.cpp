// The cutting-stock LP's prices of GPU shares (binpack/share_prices.hpp): checked against optima
// worked out by hand and against exhaustive bin packing of small instances.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "binpack/share_prices.hpp"
#include "support/bin_packing.hpp"

namespace fracpack::test {
namespace {

using binpack::cutting_stock_prices;
using binpack::packing_waste_bound;
using binpack::SharePrices;

TypicalPod share(std::int64_t milli, double weight) { return TypicalPod{MilliCpu(1000), MilliGpu(milli), 1, {}, weight, {}}; }

TEST_CASE("LP prices: one size is worth the share of a GPU its copies fill") {
  CHECK(cutting_stock_prices({500}, {7}, 1000) == std::vector<double>{0.5});
  CHECK(cutting_stock_prices({400}, {3}, 1000)[0] == doctest::Approx(0.5));  // two fit, 200 is lost
  CHECK(cutting_stock_prices({300}, {3}, 1000)[0] == doctest::Approx(1.0 / 3));
  CHECK(cutting_stock_prices({}, {}, 1000).empty());
}

TEST_CASE("LP prices: complementary shares split a GPU; a rare filler is free") {
  // 650 + 320 fill a GPU together and three 320s do too (0.96): the pair is worth 1, 320 at most 1/3.
  auto y = cutting_stock_prices({320, 650}, {10, 10}, 1000);
  CHECK(y[0] + y[1] == doctest::Approx(1.0));
  CHECK(y[0] <= 1.0 / 3 + 1e-9);
  // 810s outnumber the 160s that can join them: every 810 costs a whole GPU, a 160 nothing.
  y = cutting_stock_prices({160, 810}, {10, 100}, 1000);
  CHECK(y[0] == doctest::Approx(0.0));
  CHECK(y[1] == doctest::Approx(1.0));
}

TEST_CASE("LP bound: never above the exact optimum, never below the demand, on random small instances") {
  std::mt19937_64 rng(11);
  const std::vector<std::int64_t> menu{110, 160, 230, 320, 370, 470, 550, 650, 810};
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    std::map<std::int64_t, std::int64_t> shares;
    std::vector<std::int64_t> items;
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int i = 0; i < n; ++i) {
      const std::int64_t s = menu[rng() % menu.size()];
      ++shares[s];
      items.push_back(s);
    }
    const double demand = static_cast<double>(std::accumulate(items.begin(), items.end(), std::int64_t{0})) / 1000.0;
    const double bound = packing_waste_bound(shares);
    CHECK(bound >= 0.0);
    CHECK(demand + bound <= fewest_bins(items) + 1e-9);
  }
  // Tight where the LP is: 650 + 320 pairs leave 30 each; 600s go one per GPU.
  CHECK(packing_waste_bound({{650, 10}, {320, 10}}) == doctest::Approx(0.3));
  CHECK(packing_waste_bound({{600, 2}}) == doctest::Approx(0.8));
  CHECK(packing_waste_bound({{500, 2}}) == doctest::Approx(0.0));
  CHECK(packing_waste_bound({}) == 0.0);
  CHECK(packing_waste_bound({{1000, 3}, {0, 2}, {500, -1}}) == 0.0);  // not shares: ignored
}

TEST_CASE("LP prices: finite, non-negative and dual-feasible for any workload of shares") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 100; ++round) {
    CAPTURE(round);
    std::vector<TypicalPod> workload;
    const int shapes = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < shapes; ++i) {
      const auto milli = static_cast<std::int64_t>(1 + rng() % 999);  // 1 … 999, repeats allowed
      workload.push_back(share(milli, 1e-6 + static_cast<double>(rng() % 1000)));
    }
    const SharePrices prices(workload);
    CHECK(prices.best(1000) <= 1.0 + 1e-9);  // no GPU's worth of shares is priced above one GPU
    CHECK(prices.best(1000) >= 1.0 - 1e-9);
    for (const auto& t : workload) {
      const double y = prices.price(t.milli.count());
      CHECK(std::isfinite(y));
      CHECK(y >= 0.0);
      CHECK(y <= 1.0 + 1e-9);
    }
  }
}

/// GPUs first-fit decreasing needs for `items`: an upper bound on the optimum.
int first_fit_decreasing(std::vector<std::int64_t> items) {
  std::sort(items.rbegin(), items.rend());
  std::vector<std::int64_t> bins;
  for (auto s : items) {
    auto it = std::find_if(bins.begin(), bins.end(), [&](std::int64_t used) { return used + s <= 1000; });
    if (it == bins.end()) {
      bins.push_back(s);
    } else {
      *it += s;
    }
  }
  return static_cast<int>(bins.size());
}

TEST_CASE("LP with every share size 1 … 999: coarsened, still a valid bound, prices still feasible") {
  std::map<std::int64_t, std::int64_t> shares;
  std::vector<std::int64_t> items;
  std::vector<TypicalPod> workload;
  for (std::int64_t s = 1; s < 1000; ++s) {
    const std::int64_t count = 1 + s % 3;
    shares[s] = count;
    for (std::int64_t k = 0; k < count; ++k) items.push_back(s);
    workload.push_back(share(s, static_cast<double>(count)));
  }
  const double demand = static_cast<double>(std::accumulate(items.begin(), items.end(), std::int64_t{0})) / 1000.0;
  const double bound = packing_waste_bound(shares);
  CHECK(bound >= 0.0);
  CHECK(demand + bound <= first_fit_decreasing(items) + 1e-9);
  const SharePrices prices(workload);
  CHECK(prices.best(1000) == doctest::Approx(1.0));
  for (std::int64_t s = 1; s < 1000; ++s) {
    CHECK(prices.price(s) <= prices.best(s) + 1e-9);  // never priced above what its space earns
    CHECK(prices.regret(1000, s) >= 0.0);
  }
}

TEST_CASE("share prices: regret is 0 where a GPU can still be completed into an optimal pattern") {
  const SharePrices prices({share(650, 0.3), share(470, 0.3), share(320, 0.3),
                            TypicalPod{MilliCpu(2000), MilliGpu(1000), 1, {}, 0.1, {}}});
  CHECK(prices.best(1000) == doctest::Approx(1.0));
  CHECK(prices.best(0) == 0.0);
  CHECK(prices.price(470) == doctest::Approx(0.5));  // 470 + 470
  CHECK(prices.regret(350, 320) == doctest::Approx(0.0));   // beside a 650: completes the GPU
  CHECK(prices.regret(1000, 320) == doctest::Approx(0.0));  // an idle GPU, left for a 650
  CHECK(prices.regret(530, 320) > 0.1);                     // beside a 470: 210 left that no share uses
  CHECK(prices.regret(530, 470) == doctest::Approx(0.0));
  // A share the workload does not have is priced at what its space earns; regret never negative.
  CHECK(prices.price(480) == doctest::Approx(prices.best(480)));
  for (std::int64_t free = 0; free <= 1000; free += 10) {
    for (std::int64_t s = 10; s <= free && s < 1000; s += 30) CHECK(prices.regret(free, s) >= 0.0);
  }
  // No fractional shapes: nothing to price, no regret.
  const SharePrices none({TypicalPod{MilliCpu(2000), MilliGpu(1000), 1, {}, 1.0, {}}});
  CHECK(none.regret(530, 320) == 0.0);
  CHECK(none.best(1000) == 0.0);
}

}  // namespace
}  // namespace fracpack::test
