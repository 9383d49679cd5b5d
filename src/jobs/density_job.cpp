#include "fracpack/density_job.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "fracpack/density.hpp"
#include "fracpack/progress.hpp"

namespace fracpack {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Result<std::uint64_t> seed_of(std::string_view text) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
    return invalid_argument("--seeds: \"{}\" is not a non-negative integer", text);
  }
  return v;
}

}  // namespace

Result<std::vector<std::uint64_t>> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto dash = part.find('-');
    auto lo = seed_of(part.substr(0, dash));
    if (!lo) return lo.status();
    auto hi = dash == std::string_view::npos ? lo : seed_of(part.substr(dash + 1));
    if (!hi) return hi.status();
    if (*hi < *lo) return invalid_argument("--seeds: range {} runs backwards", part);
    if (*hi - *lo >= 10000) return invalid_argument("--seeds: range {} has more than 10000 seeds", part);
    for (std::uint64_t s = *lo; s <= *hi; ++s) out.push_back(s);
  }
  if (out.empty()) return invalid_argument("--seeds: no seed given");
  return out;
}

std::vector<std::string> parse_policy_list(const std::string& text) {
  static const std::vector<std::pair<std::string, std::string>> kAliases{
      {"random", "random"},           {"dotprod", "dot-product"},    {"dotproduct", "dot-product"},
      {"gpuclustering", "gpu-clustering"}, {"gpupacking", "gpu-packing"}, {"bestfit", "study-best-fit"},
      {"fgd", "fgd"},
  };
  std::vector<std::string> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    std::string key = lower(name);
    if (key.size() > 3 && std::isdigit(static_cast<unsigned char>(key[0])) && key[2] == '-') key = key.substr(3);  // "06-FGD"
    for (const auto& [alias, ours] : kAliases) {
      if (key == alias) name = ours;
    }
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

int run_density_job(const DensityJobOptions& options) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack bench density: {}\n", st.message());
    return 2;
  };
  auto seeds = parse_seeds(options.seeds);
  if (!seeds) return fail(seeds.status());
  if (!(options.tune > 0 && options.tune <= 10)) return fail(invalid_argument("--tune {} is outside (0, 10]", options.tune));
  auto trace = density::load_trace(options.nodes_csv, options.pods_csv);
  if (!trace) return fail(trace.status());
  density::GridOptions grid;
  grid.policies = parse_policy_list(options.policies);
  if (grid.policies.empty()) return fail(invalid_argument("--policy: no policy given"));
  grid.seeds = *seeds;
  grid.ratio = options.tune;
  grid.jobs = options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  if (options.progress) grid.progress = [](std::size_t done, std::size_t total) { draw_progress(done, total); };
  fmt::print(stderr, "{}: {} nodes, {} GPUs, {} pods, {} typical shapes; {} runs on {} threads\n", trace->workload,
             trace->nodes.size(), trace->gpus, trace->pods.size(), trace->typical.size(),
             grid.policies.size() * grid.seeds.size(), grid.jobs);
  auto runs = density::run_grid(*trace, grid);
  if (!runs) return fail(runs.status());
  if (auto st = density::write_report(options.out_dir, *trace, options.tune, *runs); !st.is_ok()) return fail(st);
  fmt::print("{}\n", density::summary_table(*runs));
  if (!options.published.empty()) {
    auto compared = density::compare_published(options.published, trace->workload, *runs);
    if (!compared) return fail(compared.status());
    fmt::print("{}", *compared);
    std::ofstream(std::filesystem::path(options.out_dir) / "compare.md") << *compared;
  }
  fmt::print("wrote {}/allo.csv, frag_ratio.csv, summary.md, allocation.svg{}\n", options.out_dir,
             options.published.empty() ? "" : ", compare.md");
  return 0;
}

}  // namespace fracpack
