#include "binpack/share_prices.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace fracpack::binpack {
namespace {

using Matrix = std::vector<std::vector<double>>;

/// The inverse of the square, non-singular basis `b` (Gauss–Jordan, partial pivoting).
Matrix inverse(Matrix b) {
  const std::size_t m = b.size();
  Matrix inv(m, std::vector<double>(m, 0.0));
  for (std::size_t i = 0; i < m; ++i) inv[i][i] = 1.0;
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < m; ++r) {
      if (std::abs(b[r][c]) > std::abs(b[p][c])) p = r;
    }
    std::swap(b[c], b[p]);
    std::swap(inv[c], inv[p]);
    const double pivot = b[c][c];
    for (std::size_t k = 0; k < m; ++k) {
      b[c][k] /= pivot;
      inv[c][k] /= pivot;
    }
    for (std::size_t r = 0; r < m; ++r) {
      if (r == c || b[r][c] == 0.0) continue;
      const double f = b[r][c];
      for (std::size_t k = 0; k < m; ++k) {
        b[r][k] -= f * b[c][k];
        inv[r][k] -= f * inv[c][k];
      }
    }
  }
  return inv;
}

/// Unbounded knapsack over `values` of items `sizes`: best[c] for every capacity 0 … capacity,
/// and the pattern (copies of each item) reaching best[capacity].
std::vector<double> knapsack(const std::vector<std::int64_t>& sizes, const std::vector<double>& values,
                             std::int64_t capacity, std::vector<int>* pattern) {
  const auto cap = static_cast<std::size_t>(capacity);
  std::vector<double> best(cap + 1, 0.0);
  std::vector<int> last(cap + 1, -1);  // the item added to reach best[c]; -1: best[c] = best[c - 1]
  for (std::size_t c = 1; c <= cap; ++c) {
    best[c] = best[c - 1];
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const auto s = static_cast<std::size_t>(sizes[i]);
      if (s <= c && best[c - s] + values[i] > best[c] + 1e-12) {
        best[c] = best[c - s] + values[i];
        last[c] = static_cast<int>(i);
      }
    }
  }
  if (pattern != nullptr) {
    pattern->assign(sizes.size(), 0);
    for (std::size_t c = cap; c > 0;) {
      if (last[c] < 0) {
        --c;
        continue;
      }
      ++(*pattern)[static_cast<std::size_t>(last[c])];
      c -= static_cast<std::size_t>(sizes[static_cast<std::size_t>(last[c])]);
    }
  }
  return best;
}

/// Past this many distinct sizes the LP works on coarser ones: sizes of 10 milli-GPU and more are
/// rounded down to a multiple of 10 (at most 108 sizes). Rounding down keeps the waste bound valid
/// (smaller shares never need more GPUs) and every real share priced at no more than its space earns.
constexpr std::size_t kMaxSizes = 64;

std::int64_t size_for_lp(std::int64_t milli, bool coarse) { return coarse && milli >= 10 ? milli - milli % 10 : milli; }

}  // namespace

std::vector<double> cutting_stock_prices(const std::vector<std::int64_t>& sizes, const std::vector<double>& demand,
                                         std::int64_t capacity) {
  const std::size_t m = sizes.size();
  if (m == 0) return {};
  // Start from one single-size pattern per item (as many copies as fit): a feasible basis.
  Matrix columns(m, std::vector<double>(m, 0.0));  // columns[j] = pattern j (copies of each item)
  for (std::size_t i = 0; i < m; ++i) columns[i][i] = static_cast<double>(capacity / sizes[i]);
  std::vector<double> y(m, 0.0);
  Matrix inv;
  // Column generation: at most a few passes over the sizes in practice; the cap only guards
  // against cycling. The basis inverse is updated per pivot and rebuilt now and then.
  const int max_iterations = 20 * static_cast<int>(m) + 100;
  constexpr int kRebuildEvery = 64;
  for (int iteration = 0; iteration < max_iterations; ++iteration) {
    if (iteration % kRebuildEvery == 0) {
      Matrix basis(m, std::vector<double>(m, 0.0));
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < m; ++j) basis[i][j] = columns[j][i];
      }
      inv = inverse(std::move(basis));
    }
    for (std::size_t i = 0; i < m; ++i) {  // y = 1ᵀ B⁻¹: every pattern costs one GPU
      y[i] = 0.0;
      for (std::size_t j = 0; j < m; ++j) y[i] += inv[j][i];
    }
    std::vector<int> pattern;
    const std::vector<double> best = knapsack(sizes, y, capacity, &pattern);
    if (best.back() <= 1.0 + 1e-9) break;  // no pattern prices above its cost: optimal
    std::vector<double> x(m, 0.0);
    std::vector<double> d(m, 0.0);
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t i = 0; i < m; ++i) {
        x[r] += inv[r][i] * demand[i];
        d[r] += inv[r][i] * pattern[i];
      }
    }
    std::size_t leave = m;
    double ratio = 0.0;
    for (std::size_t r = 0; r < m; ++r) {
      if (d[r] <= 1e-9) continue;
      const double q = std::max(0.0, x[r]) / d[r];
      if (leave == m || q < ratio - 1e-12) {
        leave = r;
        ratio = q;
      }
    }
    if (leave == m) break;  // unbounded cannot happen (demand is finite); stop on numerical trouble
    for (std::size_t i = 0; i < m; ++i) columns[leave][i] = pattern[i];
    // B⁻¹ after column `leave` is replaced by the pattern (d = B⁻¹ · pattern): one pivot.
    const double pivot = d[leave];
    for (auto& v : inv[leave]) v /= pivot;
    for (std::size_t r = 0; r < m; ++r) {
      if (r == leave || d[r] == 0.0) continue;
      for (std::size_t k = 0; k < m; ++k) inv[r][k] -= d[r] * inv[leave][k];
    }
  }
  for (auto& v : y) v = std::max(0.0, v);
  if (!std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); })) {
    for (std::size_t i = 0; i < m; ++i) y[i] = static_cast<double>(sizes[i]) / static_cast<double>(capacity);  // always feasible
  }
  // Dual-feasible however the loop ended: scale so that the best pattern is worth exactly 1.
  const double top = knapsack(sizes, y, capacity, nullptr).back();
  if (top > 0) {
    for (auto& v : y) v /= top;
  }
  return y;
}

namespace {

/// The LP over shares of one GPU: sizes (coarse when asked), the demand of each, their prices.
struct SolvedShares {
  std::vector<std::int64_t> sizes;
  std::vector<double> demand;
  std::vector<double> prices;
};

SolvedShares solve_shares(const std::map<std::int64_t, double>& demand, bool coarse) {
  std::map<std::int64_t, double> merged;
  for (const auto& [milli, d] : demand) merged[size_for_lp(milli, coarse)] += d;
  SolvedShares out;
  for (const auto& [milli, d] : merged) {
    out.sizes.push_back(milli);
    out.demand.push_back(d);
  }
  out.prices = cutting_stock_prices(out.sizes, out.demand, 1000);
  return out;
}

}  // namespace

std::map<std::int64_t, double> share_prices(const std::map<std::int64_t, std::int64_t>& shares) {
  std::map<std::int64_t, double> counts;
  for (const auto& [milli, count] : shares) {
    if (milli > 0 && milli < 1000 && count > 0) counts[milli] += static_cast<double>(count);
  }
  const bool coarse = counts.size() > kMaxSizes;
  const SolvedShares lp = solve_shares(counts, coarse);
  std::map<std::int64_t, double> price_of_size;
  for (std::size_t i = 0; i < lp.sizes.size(); ++i) price_of_size[lp.sizes[i]] = lp.prices[i];
  std::map<std::int64_t, double> out;
  for (const auto& entry : counts) out[entry.first] = price_of_size.at(size_for_lp(entry.first, coarse));
  return out;
}

double packing_waste_bound(const std::map<std::int64_t, std::int64_t>& shares) {
  double gpus = 0;
  double demand = 0;
  for (const auto& [milli, price] : share_prices(shares)) {
    const auto count = static_cast<double>(shares.at(milli));
    gpus += count * price;
    demand += count * static_cast<double>(milli) / 1000.0;
  }
  return std::max(0.0, gpus - demand);
}

SharePrices::SharePrices(const std::vector<TypicalPod>& workload) {
  std::map<std::int64_t, double> demand;
  for (const auto& t : workload) {
    if (t.gpus == 1 && t.milli.count() > 0 && t.milli.count() < 1000) demand[t.milli.count()] += t.weight;
  }
  coarse_ = demand.size() > kMaxSizes;
  const SolvedShares lp = solve_shares(demand, coarse_);
  for (std::size_t i = 0; i < lp.sizes.size(); ++i) price_[lp.sizes[i]] = lp.prices[i];
  best_ = lp.sizes.empty() ? std::vector<double>(1001, 0.0) : knapsack(lp.sizes, lp.prices, 1000, nullptr);
}

double SharePrices::best(std::int64_t free_milli) const {
  return best_[static_cast<std::size_t>(std::clamp<std::int64_t>(free_milli, 0, 1000))];
}

double SharePrices::price(std::int64_t milli) const {
  auto it = price_.find(size_for_lp(milli, coarse_));
  return it != price_.end() ? it->second : best(milli);
}

double SharePrices::regret(std::int64_t free_milli, std::int64_t milli) const {
  return std::max(0.0, best(free_milli) - best(free_milli - milli) - price(milli));
}

}  // namespace fracpack::binpack
