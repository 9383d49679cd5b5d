#include "density/svg_plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "plot/line_plot.hpp"

namespace fracpack::density {
namespace {

constexpr std::size_t kZoomFrom = 80;  // arrived %, where packing policies start to differ
constexpr std::size_t kFullAt = 100;   // arrived %: the cluster's capacity

std::vector<plot::Series> lines_of(const std::vector<PlotSeries>& series) {
  std::vector<plot::Series> lines;
  for (std::size_t i = 0; i < series.size(); ++i) {
    plot::Series line{series[i].name, {}, plot::kStrokes[i % plot::kStrokes.size()]};
    line.width = i < plot::kStrokes.size() ? 1.8 : 2.6;  // past four styles, the width tells the second round apart
    for (std::size_t x = 0; x < series[i].values.size(); ++x) line.points.emplace_back(static_cast<double>(x), series[i].values[x]);
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<plot::Band> bands_of(const std::vector<PlotSeries>& series) {
  std::vector<plot::Band> bands;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (series[i].lo.empty() || series[i].lo.size() != series[i].hi.size()) continue;
    plot::Band band{bands.empty() ? "spread over seeds (min–max)" : "", {}, i};
    for (std::size_t x = 0; x < series[i].lo.size(); ++x) band.points.emplace_back(static_cast<double>(x), series[i].lo[x], series[i].hi[x]);
    bands.push_back(std::move(band));
  }
  return bands;
}

}  // namespace

std::pair<double, double> zoom_range(const std::vector<PlotSeries>& series) {
  double lo = 100, hi = 0;
  for (const auto& s : series) {
    for (std::size_t x = kZoomFrom; x < s.values.size(); ++x) {
      // The band too: a spread cut at the panel's edge would look narrower than it is.
      const double low = x < s.lo.size() ? std::fmin(s.values[x], s.lo[x]) : s.values[x];
      const double high = x < s.hi.size() ? std::fmax(s.values[x], s.hi[x]) : s.values[x];
      if (std::isnan(low) || std::isnan(high)) continue;
      if (x >= kFullAt) lo = std::min(lo, low);  // below: the climb along y = x, the same for all
      hi = std::max(hi, high);
    }
  }
  if (lo > hi) return {0, 100};
  return {std::max(0.0, std::floor(lo) - 1), std::min(100.0, std::ceil(hi) + 1)};
}

std::string allocation_svg(const std::string& title, const std::vector<PlotSeries>& series) {
  const auto lines = lines_of(series);
  const auto bands = bands_of(series);
  plot::Axes whole{"whole range", "arrived GPU demand (% of capacity)", "GPU allocated (%)", 130, 100, true, 10, 10};
  whole.diagonal_label = "y = x (every arrival placed)";
  const auto [lo, hi] = zoom_range(series);
  plot::Axes zoom{"zoom: where policies differ", "arrived GPU demand (% of capacity)", "GPU allocated (%)", 130, hi, true, 10,
                  hi - lo > 15 ? 0.0 : hi - lo > 6 ? 2.0 : 1.0, static_cast<double>(kZoomFrom), lo};
  zoom.diagonal_label = whole.diagonal_label;
  return plot::figure_svg(title, {plot::Panel{whole, lines, bands}, plot::Panel{zoom, lines, bands}});
}

}  // namespace fracpack::density
