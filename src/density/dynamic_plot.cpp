#include "density/dynamic_plot.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>

#include "plot/line_plot.hpp"

namespace fracpack::density {
namespace {

constexpr std::size_t kSamples = 400;

/// The step function's value at `t` (the last point at or before it; the first before that).
double at(const std::vector<std::array<double, 4>>& timeline, std::size_t column, double t) {
  auto it = std::upper_bound(timeline.begin(), timeline.end(), t, [](double v, const auto& p) { return v < p[0]; });
  if (it == timeline.begin()) return timeline.empty() ? 0 : timeline.front()[column];
  return (*std::prev(it))[column];
}

}  // namespace

std::string dynamic_svg(const std::string& title, const std::vector<const DynamicRun*>& runs) {
  // Series per (policy, consolidation), in first-seen order; the window from the seeds' mean.
  std::vector<std::pair<std::string, std::vector<const DynamicRun*>>> groups;
  double from = 0;
  double to = 0;
  for (const DynamicRun* r : runs) {
    const std::string name = fmt::format("{}, consolidation {}", r->policy, r->consolidation ? "on" : "off");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (it == groups.end()) it = groups.insert(groups.end(), {name, {}});
    it->second.push_back(r);
    from += r->window_from / static_cast<double>(runs.size());
    to += r->window_to / static_cast<double>(runs.size());
  }
  const double end = to + (to - from);  // the window and as long again: the waits it leaves
  std::vector<plot::Series> allocation;
  std::vector<plot::Series> pending;
  double pending_max = 1;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    plot::Series a{groups[g].first, {}, plot::kStrokes[g % plot::kStrokes.size()]};
    plot::Series p{groups[g].first, {}, plot::kStrokes[g % plot::kStrokes.size()]};
    for (std::size_t k = 0; k <= kSamples; ++k) {
      const double t = from + (end - from) * static_cast<double>(k) / kSamples;
      double sum_a = 0;
      double sum_p = 0;
      for (const DynamicRun* r : groups[g].second) {
        sum_a += at(r->timeline, 1, t);
        sum_p += at(r->timeline, 3, t);
      }
      const auto n = static_cast<double>(groups[g].second.size());
      const double minutes = (t - from) / 60.0;
      a.points.emplace_back(minutes, sum_a / n);
      p.points.emplace_back(minutes, sum_p / n);
      pending_max = std::max(pending_max, sum_p / n);
    }
    allocation.push_back(std::move(a));
    pending.push_back(std::move(p));
  }
  const double x_max = (end - from) / 60.0;
  plot::Axes a_axes{"GPU allocated", "minutes from the arrival window's start", "GPU allocated (% of capacity)", x_max, 100};
  plot::Axes p_axes{"GPUs pending pods ask for", "minutes from the arrival window's start", "GPUs", x_max, pending_max * 1.05};
  return plot::figure_svg(title, {plot::Panel{a_axes, allocation, {}}, plot::Panel{p_axes, pending, {}}},
                          fmt::format("Mean over seeds. Arrivals end at minute {:.0f}; after that the cluster drains "
                                      "and the pods still waiting start as others finish.",
                                      (to - from) / 60.0));
}

}  // namespace fracpack::density
