// A line plot as standalone SVG text: axes with a grid, one coloured line per series, a legend.
// Internal (the density and quota reports draw with it).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fracpack::plot {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  ///< (x, y); NaN y values are skipped
  bool dashed = false;
};

struct Axes {
  std::string title;
  std::string x_label;
  std::string y_label;
  double x_max = 1;  ///< axes start at 0
  double y_max = 1;
  bool diagonal = false;  ///< draw y = x (dashed grey)
  double x_step = 0;      ///< grid step; 0: nice_step(x_max)
  double y_step = 0;
};

/// A step for about five grid lines up to `max`: 1, 2 or 5 times a power of ten.
double nice_step(double max);

std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series);

}  // namespace fracpack::plot
