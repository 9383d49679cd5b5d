#include "density/svg_plot.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace fracpack::density {
namespace {

constexpr double kWidth = 760, kHeight = 480, kLeft = 60, kRight = 180, kTop = 40, kBottom = 50;
constexpr std::array<const char*, 10> kColours{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

double px(double x) { return kLeft + x / 130.0 * (kWidth - kLeft - kRight); }
double py(double y) { return kHeight - kBottom - y / 100.0 * (kHeight - kTop - kBottom); }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string allocation_svg(const std::string& title, const std::vector<PlotSeries>& series) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kLeft, escape(title));
  for (int x = 0; x <= 130; x += 10) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                     px(x), py(0), py(100), py(0) + 16, x);
  }
  for (int y = 0; y <= 100; y += 10) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     px(0), py(y), px(130), px(0) - 6, py(y) + 4, y);
  }
  s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n", px(0),
                   py(0), px(100), py(100));
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">arrived GPU demand (% of capacity)</text>\n",
                   px(65), kHeight - 12);
  s += fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">GPU allocated (%)</text>\n", py(50));
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % kColours.size()];
    std::string points;
    for (std::size_t x = 0; x < series[i].values.size(); ++x) {
      if (std::isnan(series[i].values[x])) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(x)), py(series[i].values[x]));
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", colour, points);
    const double ly = kTop + 20.0 * static_cast<double>(i);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
                     "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
                     kWidth - kRight + 15, ly, kWidth - kRight + 35, colour, kWidth - kRight + 40, ly + 4, escape(series[i].name));
  }
  return s + "</svg>\n";
}

}  // namespace fracpack::density
