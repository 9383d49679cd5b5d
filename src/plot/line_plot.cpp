#include "plot/line_plot.hpp"

#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace fracpack::plot {
namespace {

constexpr double kWidth = 760, kHeight = 480, kLeft = 70, kRight = 190, kTop = 40, kBottom = 50;
constexpr std::array<const char*, 10> kColours{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

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

std::string number(double v) { return std::abs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v); }

/// The series in pixels, NaNs dropped, each run of points inside one pixel column reduced to its
/// first, lowest, highest and last point, in their order: the same line, with at most four
/// points per column (a 149-day timeline has tens of thousands of cycles).
template <typename Px, typename Py>
std::vector<std::pair<double, double>> in_columns(const std::vector<std::pair<double, double>>& points, Px px, Py py) {
  std::vector<std::pair<double, double>> out;
  std::vector<std::pair<double, double>> column;
  auto flush = [&] {
    if (column.empty()) return;
    std::size_t lo = 0, hi = 0;
    for (std::size_t k = 1; k < column.size(); ++k) {
      if (column[k].second < column[lo].second) lo = k;
      if (column[k].second > column[hi].second) hi = k;
    }
    for (std::size_t k = 0; k < column.size(); ++k) {
      if (k == 0 || k == lo || k == hi || k + 1 == column.size()) out.push_back(column[k]);
    }
    column.clear();
  };
  for (const auto& [x, y] : points) {
    if (std::isnan(y) || std::isnan(x)) continue;
    const std::pair<double, double> p{px(x), py(y)};
    if (!column.empty() && std::floor(column.front().first) != std::floor(p.first)) flush();
    column.push_back(p);
  }
  flush();
  return out;
}

}  // namespace

double nice_step(double max) {
  if (!(max > 0)) return 1;
  const double raw = max / 5;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series) {
  const double x_max = axes.x_max > 0 ? axes.x_max : 1;
  const double y_max = axes.y_max > 0 ? axes.y_max : 1;
  auto px = [&](double x) { return kLeft + x / x_max * (kWidth - kLeft - kRight); };
  auto py = [&](double y) { return kHeight - kBottom - y / y_max * (kHeight - kTop - kBottom); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kLeft, escape(axes.title));
  const double xs = axes.x_step > 0 ? axes.x_step : nice_step(x_max);
  for (double x = 0; x <= x_max + 1e-9; x += xs) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                     px(x), py(0), py(y_max), py(0) + 16, number(x));
  }
  const double ys = axes.y_step > 0 ? axes.y_step : nice_step(y_max);
  for (double y = 0; y <= y_max + 1e-9; y += ys) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     px(0), py(y), px(x_max), px(0) - 6, py(y) + 4, number(y));
  }
  if (axes.diagonal) {
    const double d = std::min(x_max, y_max);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n", px(0),
                     py(0), px(d), py(d));
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(x_max / 2), kHeight - 12, escape(axes.x_label));
  s += fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", py(y_max / 2),
                   escape(axes.y_label));
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % kColours.size()];
    std::string points;
    for (const auto& [x, y] : in_columns(series[i].points, px, py)) points += fmt::format("{:.1f},{:.1f} ", x, y);
    const char* dash = series[i].dashed ? " stroke-dasharray=\"6 3\"" : "";
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} points=\"{}\"/>\n", colour, dash, points);
    const double ly = kTop + 20.0 * static_cast<double>(i);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"{4}/>"
                     "<text x=\"{5:.1f}\" y=\"{6:.1f}\">{7}</text>\n",
                     kWidth - kRight + 15, ly, kWidth - kRight + 35, colour, dash, kWidth - kRight + 40, ly + 4, escape(series[i].name));
  }
  return s + "</svg>\n";
}

}  // namespace fracpack::plot
