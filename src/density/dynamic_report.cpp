// Dynamic density results as files: one CSV row per run, the summary table, allocation plots.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "fracpack/sim/density_dynamic.hpp"
#include "fracpack/sim/quota/metrics.hpp"
#include "density/dynamic_plot.hpp"

namespace fracpack::density {
namespace {

/// Runs of one (load, policy, consolidation), in first-seen order.
struct Group {
  double load;
  std::string policy;
  bool consolidation;
  std::vector<const DynamicRun*> runs;
};

std::vector<Group> groups_of(const std::vector<DynamicRun>& runs) {
  std::vector<Group> out;
  for (const auto& r : runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Group& g) {
      return g.load == r.load && g.policy == r.policy && g.consolidation == r.consolidation;
    });
    if (it == out.end()) it = out.insert(out.end(), Group{r.load, r.policy, r.consolidation, {}});
    it->runs.push_back(&r);
  }
  return out;
}

template <typename F>
double mean(const std::vector<const DynamicRun*>& runs, F f) {
  double sum = 0;
  for (const auto* r : runs) sum += f(*r);
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

/// The shape classes present, in request order: cpu, share, then GPUs ascending.
std::vector<std::string> shapes_of(const std::vector<DynamicRun>& runs) {
  std::set<std::string> seen;
  for (const auto& r : runs) {
    for (const auto& [shape, _] : r.by_shape) seen.insert(shape);
  }
  std::vector<std::string> out(seen.begin(), seen.end());
  const auto rank = [](const std::string& s) { return s == "cpu" ? -2 : s == "share" ? -1 : std::atoi(s.c_str()); };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return out;
}

/// A p95 over seeds: their mean in seconds, "∞" when any seed's pods of the shape wait forever.
std::string p95_text(const std::vector<const DynamicRun*>& runs, const std::string& shape) {
  double sum = 0;
  int n = 0;
  for (const auto* r : runs) {
    auto it = r->by_shape.find(shape);
    if (it == r->by_shape.end() || !it->second.p95_seconds) continue;
    if (*it->second.p95_seconds == quota::kWaitsForever) return "∞";
    sum += static_cast<double>(*it->second.p95_seconds);
    ++n;
  }
  return n == 0 ? "—" : fmt::format("{:.0f}", sum / n);
}

std::string load_text(double load) { return fmt::format("{:g}", 100 * load); }

}  // namespace

std::string dynamic_summary_table(const std::vector<DynamicRun>& runs) {
  const std::vector<std::string> shapes = shapes_of(runs);
  std::string out = "| load % | peak % | policy | consolidation | seeds | allocated % | frag. % | pending GPU-h | "
                    "pending GPU-h, 2+ GPUs | never started | moves |";
  std::string rule = "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|";
  for (const auto& s : shapes) {
    out += fmt::format(" p95 wait {} (s) |", s);
    rule += "---:|";
  }
  out += " s per run |\n" + rule + "---:|\n";
  for (const Group& g : groups_of(runs)) {
    out += fmt::format("| {} | {:.0f} | {} | {} | {} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.0f} |", load_text(g.load),
                       mean(g.runs, [](const auto& r) { return 100 * r.peak_demand; }), g.policy, g.consolidation ? "on" : "off",
                       g.runs.size(), mean(g.runs, [](const auto& r) { return r.allocation_window_pct; }),
                       mean(g.runs, [](const auto& r) { return r.fragmentation_window_pct; }),
                       mean(g.runs, [](const auto& r) { return r.pending_gpu_hours; }),
                       mean(g.runs, [](const auto& r) { return r.pending_gpu_hours_multi; }),
                       mean(g.runs, [](const auto& r) { return static_cast<double>(r.never_started); }),
                       mean(g.runs, [](const auto& r) { return static_cast<double>(r.moves); }));
    for (const auto& s : shapes) out += fmt::format(" {} |", p95_text(g.runs, s));
    out += fmt::format(" {:.2f} |\n", mean(g.runs, [](const auto& r) { return r.seconds; }));
  }
  return out;
}

}  // namespace fracpack::density

namespace fracpack::density {

Status write_dynamic_report(const std::filesystem::path& dir, const Trace& trace, const std::vector<DynamicRun>& runs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream csv(dir / "runs.csv");
  csv << "workload,policy,load,consolidation,seed,compression,peak_demand_pct,arrivals,window_s,span_s,allocation_window_pct,"
         "allocation_span_pct,fragmentation_window_pct,pending_gpu_hours,pending_gpu_hours_multi,never_started,moves,seconds";
  const std::vector<std::string> shapes = shapes_of(runs);
  for (const auto& s : shapes) csv << ",p95_wait_" << s;
  csv << "\n";
  for (const auto& r : runs) {
    csv << fmt::format("{},{},{},{},{},{:.1f},{:.1f},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f}", trace.workload, r.policy,
                       r.load, r.consolidation ? "on" : "off", r.seed, r.compression, 100 * r.peak_demand, r.arrivals, r.window_seconds,
                       r.span_seconds,
                       r.allocation_window_pct, r.allocation_span_pct, r.fragmentation_window_pct, r.pending_gpu_hours,
                       r.pending_gpu_hours_multi, r.never_started, r.moves, r.seconds);
    for (const auto& s : shapes) {
      auto it = r.by_shape.find(s);
      const bool some = it != r.by_shape.end() && it->second.p95_seconds;
      csv << "," << (!some ? std::string() : *it->second.p95_seconds == quota::kWaitsForever ? "inf" : std::to_string(*it->second.p95_seconds));
    }
    csv << "\n";
  }
  std::ofstream(dir / "summary.md") << dynamic_summary_table(runs);
  std::vector<double> loads;
  for (const auto& r : runs) {
    if (std::find(loads.begin(), loads.end(), r.load) == loads.end()) loads.push_back(r.load);
  }
  for (double load : loads) {
    std::vector<const DynamicRun*> these;
    for (const auto& r : runs) {
      if (r.load == load) these.push_back(&r);
    }
    const std::string title = fmt::format("{}: pods come and go, offered demand {} % of the GPUs", trace.workload, load_text(load));
    std::ofstream(dir / fmt::format("allocation-{}.svg", load_text(load))) << dynamic_svg(title, these);
  }
  if (!csv) return Status(Code::kInternal, fmt::format("{}: could not write runs.csv", dir.string()));
  return Status::ok();
}

}  // namespace fracpack::density
