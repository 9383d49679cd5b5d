// The density plot: the whole range and a zoom where the policies part, the seeds' spread as
// bands, one line style per policy, y = x in the legend.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "density/svg_plot.hpp"

namespace fracpack::density {
namespace {

PlotSeries curve(const std::string& name, double plateau) {
  PlotSeries s{name, std::vector<double>(131), std::vector<double>(131), std::vector<double>(131)};
  for (std::size_t x = 0; x <= 130; ++x) {
    s.values[x] = std::min(static_cast<double>(x), plateau);
    s.lo[x] = s.values[x] - 0.5;
    s.hi[x] = s.values[x] + 0.5;
  }
  return s;
}

TEST_CASE("density plot: the zoom's allocated range follows where the curves part, in whole percents") {
  CHECK(zoom_range({curve("fgd", 96.4), curve("best-fit", 88.2)}) == std::pair<double, double>{86, 98});  // bands ±0.5 included
  PlotSeries late = curve("a", 92.5);
  for (std::size_t x = 0; x <= 130; ++x) late.values[x] = x < 80 ? std::nan("") : 86.3 + 0.1 * static_cast<double>(x - 80);
  late.lo.clear();  // one seed: no band
  late.hi.clear();
  CHECK(zoom_range({late}) == std::pair<double, double>{87, 93});
  CHECK(zoom_range({}) == std::pair<double, double>{0, 100});
}

TEST_CASE("density plot: two panels, a band per policy, distinct styles, y = x in the legend") {
  const std::string svg = allocation_svg("t", {curve("fgd", 96), curve("gpu-packing", 90), curve("gpu-clustering", 90)});
  CHECK(svg.find("<clipPath id=\"plot1\">") != std::string::npos);  // the zoom panel
  CHECK(svg.find(">zoom: where policies differ</text>") != std::string::npos);
  CHECK(svg.find(">y = x (every arrival placed)</text>") != std::string::npos);
  CHECK(svg.find(">spread over seeds (min–max)</text>") != std::string::npos);
  std::size_t bands = 0;
  for (auto at = svg.find("<polygon"); at != std::string::npos; at = svg.find("<polygon", at + 1)) ++bands;
  CHECK(bands == 6);  // three policies, two panels
  CHECK(svg.find("stroke-dasharray=\"7 4\"") != std::string::npos);    // the second policy is dashed
  CHECK(svg.find("stroke-dasharray=\"1.5 3\"") != std::string::npos);  // the third dotted: it no longer hides under the second
}

}  // namespace
}  // namespace fracpack::density
