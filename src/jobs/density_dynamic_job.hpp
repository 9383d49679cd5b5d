// `fracpack bench density --dynamic` (density_dynamic.hpp does the work). Internal to src/jobs/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fracpack/sim/density_job.hpp"

namespace fracpack {

/// Runs loads × policies × consolidation × seeds, writes the report into options.out_dir and
/// prints the summary. Returns the exit code: 0, or 2 for bad input (message on stderr).
int run_dynamic_density_job(const DensityJobOptions& options, const std::vector<std::string>& policies,
                            const std::vector<std::uint64_t>& seeds);

}  // namespace fracpack
