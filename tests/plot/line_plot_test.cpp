// The SVG line plot: long series are drawn with at most four points per pixel column, and the
// drawn line keeps every column's extremes (a one-cycle peak in a 149-day timeline still shows).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "plot/line_plot.hpp"

namespace fracpack::plot {
namespace {

/// The (x, y) pixel pairs of the first polyline in `svg`.
std::vector<std::pair<double, double>> polyline(const std::string& svg) {
  const auto start = svg.find("points=\"");
  REQUIRE(start != std::string::npos);
  const auto end = svg.find('"', start + 8);
  const std::string text = svg.substr(start + 8, end - start - 8);
  std::vector<std::pair<double, double>> out;
  const std::regex pair(R"(([-0-9.]+),([-0-9.]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pair); it != std::sregex_iterator(); ++it) {
    out.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return out;
}

TEST_CASE("line plot: 100,000 points become at most four per pixel column, peaks and dips kept") {
  Series s{"allocated", {}};
  for (int i = 0; i < 100000; ++i) s.points.emplace_back(i / 1000.0, 10.0);
  s.points[50000].second = 90;  // one sample high
  s.points[70000].second = 0;   // one sample low
  const auto points = polyline(line_plot_svg(Axes{"t", "x", "y", 100, 100, false}, {s}));
  CHECK(points.size() <= 4 * 500 + 4);  // the plot area is 500 px wide
  CHECK(points.size() >= 500);          // every column is still drawn
  double lowest_y = 1e9, highest_y = -1e9;  // SVG y grows downwards
  for (const auto& [x, y] : points) {
    lowest_y = std::min(lowest_y, y);
    highest_y = std::max(highest_y, y);
  }
  CHECK(lowest_y == doctest::Approx(40 + (480 - 40 - 50) * 0.1));  // y = 90: the peak is drawn
  CHECK(highest_y == doctest::Approx(480 - 50));                   // y = 0: the dip is drawn
  for (std::size_t k = 1; k < points.size(); ++k) CHECK(points[k].first >= points[k - 1].first);  // in order
}

TEST_CASE("line plot: short series are drawn point for point, NaNs skipped") {
  Series s{"a", {{0, 0}, {10, 50}, {20, std::nan("")}, {30, 100}}};
  const auto points = polyline(line_plot_svg(Axes{"t", "x", "y", 30, 100, false}, {s}));
  REQUIRE(points.size() == 3);
  CHECK(points[0].first == doctest::Approx(70));
  CHECK(points[2].first == doctest::Approx(570));
}

TEST_CASE("line plot: the legend is as wide as its longest entry; styles, bands, y = x and the caption are drawn") {
  Series a{"fragmentation of idle GPU (a long legend entry that used to be clipped)", {{0, 10}, {10, 20}}};
  Series b{"b", {{0, 5}, {10, 6}}, Stroke::kDotted};
  Axes axes{"t", "x", "y", 10, 100, true};
  axes.diagonal_label = "y = x (every arrival placed)";
  const std::string svg = figure_svg("t", {Panel{axes, {a, b}, {Band{"spread", {{0, 1, 3}, {10, 2, 4}}, 1}}}}, "a caption under the plot");
  std::smatch width;
  REQUIRE(std::regex_search(svg, width, std::regex("width=\"([0-9]+)\"")));
  // 570 px of plot, 20 px gap, then the entry: at least 7 px per character.
  CHECK(std::stod(width[1]) >= 570 + 20 + 34 + 7.0 * static_cast<double>(a.name.size()));
  CHECK(svg.find(">" + a.name + "<") != std::string::npos);
  CHECK(svg.find("stroke-dasharray=\"1.5 3\"") != std::string::npos);  // b is dotted
  CHECK(svg.find("<polygon fill=\"#ff7f0e\" fill-opacity=\"0.2\"") != std::string::npos);  // the band in b's colour
  CHECK(svg.find(">y = x (every arrival placed)<") != std::string::npos);
  CHECK(svg.find(">a caption under the plot<") != std::string::npos);
}

TEST_CASE("figure: two panels side by side, the zoom clipped to its own range") {
  Series s{"a", {{0, 0}, {130, 95}}};
  Axes whole{"whole", "x", "y", 130, 100, false};
  Axes zoom{"zoom", "x", "y", 130, 97, false, 10, 1, 80, 85};
  const std::string svg = figure_svg("t", {Panel{whole, {s}, {}}, Panel{zoom, {s}, {}}});
  CHECK(svg.find("<clipPath id=\"plot0\">") != std::string::npos);
  CHECK(svg.find("<clipPath id=\"plot1\">") != std::string::npos);
  CHECK(svg.find("clip-path=\"url(#plot1)\"") != std::string::npos);
  CHECK(svg.find(">85</text>") != std::string::npos);  // the zoom's y axis starts at 85
  CHECK(svg.find(">zoom</text>") != std::string::npos);
  CHECK(svg.find(">-0<") == std::string::npos);  // 0 is "0", never "-0"
  std::size_t legends = 0;  // one legend for both panels
  for (auto at = svg.find(">a</text>"); at != std::string::npos; at = svg.find(">a</text>", at + 1)) ++legends;
  CHECK(legends == 1);
}

}  // namespace
}  // namespace fracpack::plot
