// `fracpack bench density`: the density harness as a command (density.hpp does the work).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fracpack/core/status.hpp"

namespace fracpack {

struct DensityJobOptions {
  std::string nodes_csv;
  std::string pods_csv;
  std::string policies = "random,dot-product,gpu-clustering,gpu-packing,study-best-fit,fgd,fgd-cpu,fgd-lp";
  std::string seeds = "42-51";
  double tune = 1.3;
  std::string out_dir = "density-out";
  std::string published;  ///< fgd-published/allo.csv to compare with ("" = no comparison)
  unsigned jobs = 0;      ///< 0: one per core
  bool progress = true;
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

/// Runs the grid, writes the report into out_dir, prints the summary (and the comparison) on
/// stdout. Returns the process exit code: 0, or 2 for bad input (message on stderr).
int run_density_job(const DensityJobOptions& options);

}  // namespace fracpack
