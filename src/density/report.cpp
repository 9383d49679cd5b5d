// The run results as files: the published CSV layout, a summary table, the plot.
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "density/svg_plot.hpp"
#include "fracpack/sim/density.hpp"

namespace fracpack::density {
namespace {

std::string cell(double v) { return std::isnan(v) ? "" : fmt::format("{:.2f}", v); }
std::string shown(double v, int decimals = 2) { return std::isnan(v) ? "—" : fmt::format("{:.{}f}", v, decimals); }

std::string curve_header(bool with_gpus) {
  std::string h = with_gpus ? "workload,sc_policy,tune,seed,total_gpus" : "workload,sc_policy,tune,seed";
  for (int x = 0; x < kCurvePoints; ++x) h += fmt::format(",{}", x);
  return h + "\n";
}

/// Runs grouped by policy, in first-seen order.
std::vector<std::pair<std::string, std::vector<const RunResult*>>> by_policy(const std::vector<RunResult>& runs) {
  std::vector<std::pair<std::string, std::vector<const RunResult*>>> out;
  for (const auto& r : runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == r.policy; });
    if (it == out.end()) it = out.insert(out.end(), {r.policy, {}});
    it->second.push_back(&r);
  }
  return out;
}

double mean_of(const std::vector<const RunResult*>& runs, const std::function<double(const RunResult&)>& f) {
  double sum = 0;
  int n = 0;
  for (const auto* r : runs) {
    const double v = f(*r);
    if (std::isnan(v)) continue;
    sum += v;
    ++n;
  }
  return n == 0 ? std::nan("") : sum / n;
}

}  // namespace

std::string_view published_label(std::string_view policy) {
  static const std::map<std::string_view, std::string_view> kLabels{
      {"random", "01-Random"},         {"dot-product", "02-DotProd"},     {"gpu-clustering", "03-GpuClustering"},
      {"gpu-packing", "04-GpuPacking"}, {"study-best-fit", "05-BestFit"}, {"fgd", "06-FGD"},
  };
  auto it = kLabels.find(policy);
  return it == kLabels.end() ? std::string_view{} : it->second;
}

std::string summary_table(const std::vector<RunResult>& runs) {
  std::string out =
      "| policy | seeds | allocated at 100 % | allocated at 130 % | allocated at the end | LP ceiling | "
      "ceiling with CPU | unallocated GPUs | idle GPUs | frag. ratio at 130 % | failed pods | s per run |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [policy, group] : by_policy(runs)) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", policy, group.size(),
                       shown(mean_of(group, [](const RunResult& r) { return r.allocation[100]; })),
                       shown(mean_of(group, [](const RunResult& r) { return r.allocation[130]; })),
                       shown(mean_of(group, [](const RunResult& r) { return r.final_allocation; })),
                       shown(mean_of(group, [](const RunResult& r) { return r.allocation_ceiling; })),
                       shown(mean_of(group, [](const RunResult& r) { return r.cpu_ceiling; })),
                       shown(mean_of(group, [](const RunResult& r) { return r.unallocated_gpus; }), 1),
                       shown(mean_of(group, [](const RunResult& r) { return static_cast<double>(r.idle_gpus); }), 1),
                       shown(mean_of(group, [](const RunResult& r) { return r.frag_ratio[130]; })),
                       shown(mean_of(group, [](const RunResult& r) { return static_cast<double>(r.failed); }), 0),
                       shown(mean_of(group, [](const RunResult& r) { return r.seconds; })));
  }
  return out;
}

Status prepare_output(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return invalid_argument("--out {}: cannot create the directory{}", dir.string(), ec ? ": " + ec.message() : " (a file is in the way)");
  }
  const auto probe = dir / ".fracpack-write-test";
  {
    std::ofstream f(probe);
    if (!(f << "ok") || !f.flush()) return invalid_argument("--out {}: cannot write files there", dir.string());
  }
  std::filesystem::remove(probe, ec);
  return {};
}

Status write_report(const std::filesystem::path& dir, const Trace& trace, double ratio, const std::vector<RunResult>& runs) {
  if (auto st = prepare_output(dir); !st.is_ok()) return st;
  std::ofstream allo(dir / "allo.csv");
  std::ofstream frag(dir / "frag_ratio.csv");
  std::ofstream summary(dir / "summary.md");
  if (!allo || !frag || !summary) return invalid_argument("--out {}: cannot write files there", dir.string());
  allo << curve_header(true);
  frag << curve_header(false);
  for (const auto& r : runs) {
    const std::string label(published_label(r.policy).empty() ? r.policy : published_label(r.policy));
    allo << fmt::format("{},{},{},{},{}", trace.workload, label, ratio, r.seed, trace.gpus);
    frag << fmt::format("{},{},{},{}", trace.workload, label, ratio, r.seed);
    for (int x = 0; x < kCurvePoints; ++x) {
      allo << ',' << cell(r.allocation[static_cast<std::size_t>(x)]);
      frag << ',' << cell(r.frag_ratio[static_cast<std::size_t>(x)]);
    }
    allo << '\n';
    frag << '\n';
  }
  summary << fmt::format("# Density: {} ({} nodes, {} GPUs, inflation {})\n\n", trace.workload, trace.nodes.size(), trace.gpus, ratio)
          << summary_table(runs);
  std::vector<PlotSeries> series;
  for (const auto& [policy, group] : by_policy(runs)) {
    PlotSeries s{policy, std::vector<double>(kCurvePoints), std::vector<double>(kCurvePoints), std::vector<double>(kCurvePoints)};
    for (int x = 0; x < kCurvePoints; ++x) {
      const auto at = static_cast<std::size_t>(x);
      s.values[at] = mean_of(group, [at](const RunResult& r) { return r.allocation[at]; });
      s.lo[at] = s.hi[at] = std::nan("");
      for (const RunResult* r : group) {  // NaN (no point there) is skipped: fmin/fmax take the other
        s.lo[at] = std::fmin(s.lo[at], r->allocation[at]);
        s.hi[at] = std::fmax(s.hi[at], r->allocation[at]);
      }
    }
    if (group.size() < 2) {  // one seed: no spread to show
      s.lo.clear();
      s.hi.clear();
    }
    series.push_back(std::move(s));
  }
  std::ofstream svg(dir / "allocation.svg");
  svg << allocation_svg(fmt::format("GPU allocation vs arrived demand — {}", trace.workload), series);
  if (!allo || !frag || !summary || !svg) return invalid_argument("--out {}: writing failed (disk full?)", dir.string());
  return {};
}

}  // namespace fracpack::density
