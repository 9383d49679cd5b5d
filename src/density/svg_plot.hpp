// The density plot: curves of GPU allocated over arrived demand 0..130 %, as standalone SVG
// text. Internal.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fracpack::density {

struct PlotSeries {
  std::string name;
  std::vector<double> values;  ///< one per point 0..130 (the mean over seeds); NaN points are skipped
  std::vector<double> lo;      ///< per point: the lowest seed's (empty: no band)
  std::vector<double> hi;      ///< per point: the highest seed's
};

/// Two panels: the whole range (x: arrived GPU demand 0–130 % of capacity, y: GPU allocated
/// 0–100 %, with y = x: every arrival placed) and a zoom on where policies differ (arrived
/// 80–130 %, allocated around the curves' range there). One line style and colour per series,
/// each with its seeds' spread as a band.
std::string allocation_svg(const std::string& title, const std::vector<PlotSeries>& series);

/// The zoom panel's allocated range: from the curves' (and their bands') lowest value past 100 %
/// arrived (below it they climb y = x together) to their highest over 80–130 %, widened to whole percents with a
/// point of margin, within 0–100.
std::pair<double, double> zoom_range(const std::vector<PlotSeries>& series);

}  // namespace fracpack::density
