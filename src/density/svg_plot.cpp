#include "density/svg_plot.hpp"

#include "plot/line_plot.hpp"

namespace fracpack::density {

std::string allocation_svg(const std::string& title, const std::vector<PlotSeries>& series) {
  std::vector<plot::Series> lines;
  for (const auto& s : series) {
    plot::Series line{s.name, {}, false};
    for (std::size_t x = 0; x < s.values.size(); ++x) line.points.emplace_back(static_cast<double>(x), s.values[x]);
    lines.push_back(std::move(line));
  }
  return plot::line_plot_svg(plot::Axes{title, "arrived GPU demand (% of capacity)", "GPU allocated (%)", 130, 100, true, 10, 10}, lines);
}

}  // namespace fracpack::density
