// A line plot of curves over arrived demand 0..130 %, as standalone SVG text. Internal.
#pragma once

#include <string>
#include <vector>

namespace fracpack::density {

struct PlotSeries {
  std::string name;
  std::vector<double> values;  ///< one per point 0..130; NaN points are skipped
};

/// x: arrived GPU demand (% of capacity), y: GPU allocated (%), one coloured line per series,
/// a legend, and the diagonal y = x (every arrival placed).
std::string allocation_svg(const std::string& title, const std::vector<PlotSeries>& series);

}  // namespace fracpack::density
