#include "plot/line_plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace fracpack::plot {
namespace {

constexpr double kHeight = 480, kLeft = 70, kTop = 40, kBottom = 50, kGap = 90;
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

std::string number(double v) {
  if (std::abs(v) < 1e-9) return "0";  // not "-0" from a sum of steps
  return std::abs(v - std::round(v)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

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

/// The dash pattern of `stroke` as SVG attributes ("" for solid).
std::string dash(Stroke stroke) {
  switch (stroke) {
    case Stroke::kSolid: return "";
    case Stroke::kDashed: return " stroke-dasharray=\"7 4\"";
    case Stroke::kDotted: return " stroke-dasharray=\"1.5 3\" stroke-linecap=\"round\"";
    case Stroke::kDashDot: return " stroke-dasharray=\"8 3 2 3\"";
  }
  return "";
}

std::string colour_of(const Series& s, std::size_t i) { return s.colour.empty() ? kColours[i % kColours.size()] : s.colour; }

/// One panel's geometry: where its plot area is, and the data → pixel maps.
struct Frame {
  const Axes& axes;
  double left;
  double width;
  [[nodiscard]] double x_span() const { return axes.x_max > axes.x_min ? axes.x_max - axes.x_min : 1; }
  [[nodiscard]] double y_span() const { return axes.y_max > axes.y_min ? axes.y_max - axes.y_min : 1; }
  [[nodiscard]] double px(double x) const { return left + (x - axes.x_min) / x_span() * width; }
  [[nodiscard]] double py(double y) const { return kHeight - kBottom - (y - axes.y_min) / y_span() * (kHeight - kTop - kBottom); }
};

std::string grid(const Frame& f) {
  const Axes& a = f.axes;
  std::string s;
  const double xs = a.x_step > 0 ? a.x_step : nice_step(f.x_span());
  for (double x = std::ceil(a.x_min / xs - 1e-9) * xs; x <= a.x_max + 1e-9; x += xs) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                     f.px(x), f.py(a.y_min), f.py(a.y_max), f.py(a.y_min) + 16, number(x));
  }
  const double ys = a.y_step > 0 ? a.y_step : nice_step(f.y_span());
  for (double y = std::ceil(a.y_min / ys - 1e-9) * ys; y <= a.y_max + 1e-9; y += ys) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     f.px(a.x_min), f.py(y), f.px(a.x_max), f.px(a.x_min) - 6, f.py(y) + 4, number(y));
  }
  s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#999\"/>\n", f.left, kTop,
                   f.width, kHeight - kTop - kBottom);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", f.left + f.width / 2, kHeight - 12,
                   escape(a.x_label));
  s += fmt::format("<text transform=\"translate({:.1f} {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", f.left - 54,
                   f.py(a.y_min + f.y_span() / 2), escape(a.y_label));
  return s;
}

std::string band_svg(const Frame& f, const Band& b, const std::string& colour) {
  std::string points;
  for (const auto& [x, lo, hi] : b.points) {
    if (!std::isnan(hi) && !std::isnan(x)) points += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(hi));
  }
  for (auto it = b.points.rbegin(); it != b.points.rend(); ++it) {
    const auto& [x, lo, hi] = *it;
    if (!std::isnan(lo) && !std::isnan(x)) points += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(lo));
  }
  return fmt::format("<polygon fill=\"{}\" fill-opacity=\"0.2\" stroke=\"none\" points=\"{}\"/>\n", colour, points);
}

std::string panel_svg(const Panel& panel, const Frame& f, std::size_t k, bool titled) {
  const Axes& a = panel.axes;
  std::string s = fmt::format("<clipPath id=\"plot{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/></clipPath>\n", k,
                              f.left, kTop, f.width, kHeight - kTop - kBottom);
  if (titled) s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n", f.left, kTop - 6, escape(a.title));
  s += grid(f);
  s += fmt::format("<g clip-path=\"url(#plot{})\">\n", k);
  for (const Band& b : panel.bands) {
    const std::string colour = b.colour_of < panel.series.size() ? colour_of(panel.series[b.colour_of], b.colour_of) : "#999";
    s += band_svg(f, b, colour);
  }
  if (a.diagonal) {
    const double lo = std::max(a.x_min, a.y_min), hi = std::min(a.x_max, a.y_max);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n", f.px(lo),
                     f.py(lo), f.px(hi), f.py(hi));
  }
  for (std::size_t i = 0; i < panel.series.size(); ++i) {
    const Series& line = panel.series[i];
    std::string points;
    for (const auto& [x, y] : in_columns(line.points, [&](double v) { return f.px(v); }, [&](double v) { return f.py(v); })) {
      points += fmt::format("{:.1f},{:.1f} ", x, y);
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"{}\"/>\n", colour_of(line, i), line.width,
                     dash(line.stroke), points);
  }
  return s + "</g>\n";
}

/// The legend's entries at `x`: the series, then the bands, then y = x.
std::string legend_svg(const Panel& panel, double x) {
  std::string s;
  double y = kTop + 4;
  for (std::size_t i = 0; i < panel.series.size(); ++i, y += 20) {
    const Series& line = panel.series[i];
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"{4}\"{5}/>"
                     "<text x=\"{6:.1f}\" y=\"{7:.1f}\">{8}</text>\n",
                     x, y, x + 28, colour_of(line, i), std::max(2.5, line.width), dash(line.stroke), x + 34, y + 4, escape(line.name));
  }
  for (const Band& b : panel.bands) {
    if (b.name.empty()) continue;
    const std::string colour = b.colour_of < panel.series.size() ? colour_of(panel.series[b.colour_of], b.colour_of) : "#999";
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"28\" height=\"10\" fill=\"{}\" fill-opacity=\"0.2\"/>"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     x, y - 5, colour, x + 34, y + 4, escape(b.name));
    y += 20;
  }
  if (panel.axes.diagonal) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>"
                     "<text x=\"{3:.1f}\" y=\"{4:.1f}\">{5}</text>\n",
                     x, y, x + 28, x + 34, y + 4, escape(panel.axes.diagonal_label));
  }
  return s;
}

/// The widest legend entry in px (about 7 px per character at 12 px sans-serif).
double legend_width(const Panel& panel) {
  std::size_t chars = panel.axes.diagonal ? panel.axes.diagonal_label.size() : 0;
  for (const auto& line : panel.series) chars = std::max(chars, line.name.size());
  for (const auto& b : panel.bands) chars = std::max(chars, b.name.size());
  return 34 + 7.0 * static_cast<double>(chars) + 10;
}

/// `text` cut into lines of at most `width` characters, at spaces.
std::vector<std::string> wrapped(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t space = std::min(text.find(' ', at), text.size());
    const std::string word = text.substr(at, space - at);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    at = space + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
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

std::string figure_svg(const std::string& title, const std::vector<Panel>& panels, const std::string& caption) {
  const double area = panels.size() <= 1 ? 500 : 400;
  std::vector<Frame> frames;
  for (std::size_t k = 0; k < panels.size(); ++k) frames.push_back(Frame{panels[k].axes, kLeft + static_cast<double>(k) * (area + kGap), area});
  const double legend_x = kLeft + static_cast<double>(panels.size()) * area + static_cast<double>(panels.empty() ? 0 : panels.size() - 1) * kGap + 20;
  const double width = legend_x + (panels.empty() ? 0 : legend_width(panels.front())) + 10;
  const std::vector<std::string> notes = wrapped(caption, static_cast<std::size_t>(std::max(40.0, (width - 80) / 6.5)));
  const double height = kHeight + 18.0 * static_cast<double>(notes.size()) + (notes.empty() ? 0 : 6);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\">{3}</text>\n",
      width, height, kLeft, escape(title));
  for (std::size_t k = 0; k < panels.size(); ++k) s += panel_svg(panels[k], frames[k], k, panels.size() > 1);
  if (!panels.empty()) s += legend_svg(panels.front(), legend_x);
  for (std::size_t i = 0; i < notes.size(); ++i) {
    s += fmt::format("<text x=\"{}\" y=\"{:.0f}\" fill=\"#444\">{}</text>\n", kLeft, kHeight + 12 + 18.0 * static_cast<double>(i),
                     escape(notes[i]));
  }
  return s + "</svg>\n";
}

std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series, const std::string& caption) {
  return figure_svg(axes.title, {Panel{axes, series, {}}}, caption);
}

}  // namespace fracpack::plot
