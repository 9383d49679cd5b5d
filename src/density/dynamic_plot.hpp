// The dynamic density plot: GPU allocation and the GPUs pending pods ask for, over time, per
// policy with and without consolidation (seed means). Internal to src/density/.
#pragma once

#include <string>
#include <vector>

#include "fracpack/sim/density_dynamic.hpp"

namespace fracpack::density {

/// One figure for the runs of one load: two panels over the arrival window and as long again
/// after it (minutes from the window's start), each series the mean over its seeds of a step
/// function sampled at 400 points.
std::string dynamic_svg(const std::string& title, const std::vector<const DynamicRun*>& runs);

}  // namespace fracpack::density
