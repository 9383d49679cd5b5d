// A curve over arrived demand, bucketed like the study's analysis scripts
// (experiments/analysis/merge_alloc_discrete_0920.py). Internal to src/density/.
#pragma once

#include <cstdint>
#include <vector>

namespace fracpack::density {

class CurveBuilder {
 public:
  explicit CurveBuilder(std::int64_t gpus) : gpus_(gpus), sum_(kPoints, 0.0), count_(kPoints, 0) {}

  /// One arrival: `arrived_milli` of demand so far, and the value after it. The arrival's bucket
  /// is arrived demand in % of capacity, rounded half to even (Python's round()); the value is
  /// kept to two decimals as the study rounds it.
  void add(std::int64_t arrived_milli, double value);

  /// Per bucket 0..130: the mean of its values; an empty bucket takes the mean of buckets x−1..x+1
  /// (the study's fallback); NaN when those are empty too.
  [[nodiscard]] std::vector<double> points() const;

  static constexpr int kPoints = 131;

 private:
  std::int64_t gpus_;
  std::vector<double> sum_;
  std::vector<std::int64_t> count_;
};

}  // namespace fracpack::density
