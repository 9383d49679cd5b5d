// Line plots as standalone SVG text: one or more panels side by side (a panel zooms into part of
// another), each with axes, a grid and its lines; bands (a spread, drawn under the lines); one
// legend for all, as wide as its longest entry; a caption under the panels. Internal (the density
// and quota reports draw with it).
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <array>
#include <vector>

namespace fracpack::plot {

/// How a line is stroked: with colour, what tells lines apart in grey print and for colour-blind
/// readers.
enum class Stroke { kSolid, kDashed, kDotted, kDashDot };

/// Every stroke, in the order series take them by position.
inline constexpr std::array<Stroke, 4> kStrokes{Stroke::kSolid, Stroke::kDashed, Stroke::kDotted, Stroke::kDashDot};

struct Series {
  std::string name{};
  std::vector<std::pair<double, double>> points{};  ///< (x, y); NaN y values are skipped
  Stroke stroke = Stroke::kSolid;
  std::string colour{};  ///< "" = the palette's, by position
  double width = 1.5;  ///< px
};

/// A shaded spread from lo to hi (the runs' minimum and maximum), under the lines, in the colour
/// of series `colour_of` (its position in the panel's series).
struct Band {
  std::string name{};  ///< legend entry ("" = none)
  std::vector<std::tuple<double, double, double>> points{};  ///< (x, lo, hi)
  std::size_t colour_of = 0;
};

struct Axes {
  std::string title{};
  std::string x_label{};
  std::string y_label{};
  double x_max = 1;
  double y_max = 1;
  bool diagonal = false;  ///< draw y = x (dashed grey, "y = x" in the legend)
  double x_step = 0;      ///< grid step; 0: nice_step of the range
  double y_step = 0;
  double x_min = 0;
  double y_min = 0;
  std::string diagonal_label = "y = x";
};

struct Panel {
  Axes axes{};
  std::vector<Series> series{};
  std::vector<Band> bands{};
};

/// A step for about five grid lines up to `max`: 1, 2 or 5 times a power of ten.
double nice_step(double max);

/// One panel: a plot area 500 px wide and 390 px high at (70, 40), the legend right of it.
std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series, const std::string& caption = "");

/// Panels side by side under `title`, the first one's series and bands in the legend (the
/// others are expected to draw the same ones), `caption` under them (wrapped at ~110
/// characters). Lines are clipped to their panel.
std::string figure_svg(const std::string& title, const std::vector<Panel>& panels, const std::string& caption = "");

}  // namespace fracpack::plot
