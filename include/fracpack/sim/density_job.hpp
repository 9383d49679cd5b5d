// `fracpack bench density`: the density harness as a command (density.hpp does the work).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fracpack/core/status.hpp"

namespace fracpack {

/// The policies a static run compares by default: the study's six and ours.
inline constexpr const char* kStaticPolicies = "random,dot-product,gpu-clustering,gpu-packing,study-best-fit,fgd,fgd-cpu,fgd-lp";
/// A dynamic run's: the study's best and ours (each runs twice, with and without consolidation).
inline constexpr const char* kDynamicPolicies = "fgd,fgd-lp";

struct DensityJobOptions {
  std::string nodes_csv;
  std::string pods_csv;
  std::string policies;  ///< "": kStaticPolicies, or kDynamicPolicies with `dynamic`
  std::string seeds = "42-51";
  /// Inflation: pods arrive until their GPU demand is this × capacity. NaN: 1.3 (the study's), or
  /// 4 with `dynamic` (enough short pods to load the cluster over hours: docs/density.md).
  double tune = std::numeric_limits<double>::quiet_NaN();
  std::string out_dir = "density-out";
  std::string published;  ///< fgd-published/allo.csv to compare with ("" = no comparison)
  unsigned jobs = 0;      ///< 0: one per core
  bool progress = true;
  /// Pods come and go (density_dynamic.hpp) instead of arriving for ever.
  bool dynamic = false;
  std::string loads = "1.0";             ///< dynamic: peak offered demands, comma-separated (× capacity)
  std::string consolidation = "both";    ///< dynamic: "off", "on" or "both"
  std::int64_t max_moves_per_hour = 0;   ///< dynamic: 0 = no bound
};

/// "42-51" or "42,45,47" (or a mix, spaces allowed) → seeds in the given order. kInvalidArgument
/// naming --seeds for a malformed item, a backwards range, a seed listed twice, or more than
/// 10,000 seeds in all.
Result<std::vector<std::uint64_t>> parse_seeds(const std::string& text);

/// Policy names separated by commas; the study's labels (Random, DotProd, GpuClustering,
/// GpuPacking, BestFit, FGD, with or without their "0N-" prefix) map to our names. kInvalidArgument
/// naming --policy when the list is empty or names a policy twice (unknown names are refused by
/// make_policy() before any run).
Result<std::vector<std::string>> parse_policy_list(const std::string& text);

/// "1.0" or "0.9,1.1" → loads; kInvalidArgument naming --load for a malformed or non-positive
/// item, or one listed twice.
Result<std::vector<double>> parse_loads(const std::string& text);

/// Runs the grid, writes the report into out_dir, prints the summary (and the comparison) on
/// stdout. Returns the process exit code: 0, or 2 for bad input (message on stderr).
int run_density_job(const DensityJobOptions& options);

}  // namespace fracpack
