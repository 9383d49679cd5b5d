#include "fracpack/sim/density_job.hpp"

#include "fracpack/binpack/policy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>


#include <fmt/format.h>

#include "fracpack/sim/density.hpp"
#include "fracpack/core/progress.hpp"
#include "jobs/density_dynamic_job.hpp"

namespace fracpack {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Result<std::uint64_t> seed_of(std::string_view text, std::string_view part) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
    return invalid_argument("--seeds: \"{}\" is not a seed (a non-negative integer) or a range FROM-TO", part);
  }
  return v;
}

constexpr std::size_t kMaxSeeds = 10000;

}  // namespace

Result<std::vector<std::uint64_t>> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  std::set<std::uint64_t> seen;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view part = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto dash = part.find('-');
    auto lo = seed_of(part.substr(0, dash), part);
    if (!lo) return lo.status();
    auto hi = dash == std::string_view::npos ? lo : seed_of(part.substr(dash + 1), part);
    if (!hi) return hi.status();
    if (*hi < *lo) return invalid_argument("--seeds: range {} runs backwards", part);
    if (*hi - *lo >= kMaxSeeds) return invalid_argument("--seeds: more than {} seeds", kMaxSeeds);
    for (std::uint64_t s = *lo; s <= *hi; ++s) {
      if (!seen.insert(s).second) return invalid_argument("--seeds: seed {} is listed twice", s);
      out.push_back(s);
      if (out.size() > kMaxSeeds) return invalid_argument("--seeds: more than {} seeds", kMaxSeeds);
    }
  }
  if (out.empty()) return invalid_argument("--seeds: no seed given");
  return out;
}

Result<std::vector<std::string>> parse_policy_list(const std::string& text) {
  static const std::vector<std::pair<std::string, std::string>> kAliases{
      {"random", "random"},           {"dotprod", "dot-product"},    {"dotproduct", "dot-product"},
      {"gpuclustering", "gpu-clustering"}, {"gpupacking", "gpu-packing"}, {"bestfit", "study-best-fit"},
      {"fgd", "fgd"},
  };
  std::vector<std::string> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string given(trim(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (given.empty()) continue;
    std::string name = given;
    std::string key = lower(name);
    if (key.size() > 3 && std::isdigit(static_cast<unsigned char>(key[0])) && key[2] == '-') key = key.substr(3);  // "06-FGD"
    for (const auto& [alias, ours] : kAliases) {
      if (key == alias) name = ours;
    }
    if (!known_policy(name)) {
      // "unknown policy …" with the list of known ones, before the trace is read.
      return invalid_argument("--policy: {}", make_policy(name).status().message());
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return invalid_argument("--policy: {} is listed twice (\"{}\" names it again)", name, given);
    }
    out.push_back(name);
  }
  if (out.empty()) return invalid_argument("--policy: no policy given");
  return out;
}

Result<std::vector<double>> parse_loads(const std::string& text) {
  std::vector<double> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string part(trim(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc{} || ptr != part.data() + part.size() || !(v > 0) || !(v <= 10)) {
      return invalid_argument("--load: \"{}\" is not a load in (0, 10] (the offered demand's mean over the arrivals × GPU capacity)", part);
    }
    if (std::find(out.begin(), out.end(), v) != out.end()) return invalid_argument("--load: {} is listed twice", part);
    out.push_back(v);
  }
  if (out.empty()) return invalid_argument("--load: no load given");
  return out;
}

int run_density_job(const DensityJobOptions& given) {
  DensityJobOptions options = given;
  if (std::isnan(options.tune)) options.tune = options.dynamic ? 4.0 : 1.3;
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack bench density: {}\n", st.message());
    return 2;
  };
  auto seeds = parse_seeds(options.seeds);
  if (!seeds) return fail(seeds.status());
  if (!(options.tune > 0 && options.tune <= 10)) return fail(invalid_argument("--tune {} is outside (0, 10]", options.tune));
  auto policies = parse_policy_list(!options.policies.empty() ? options.policies
                                    : options.dynamic        ? kDynamicPolicies
                                                             : kStaticPolicies);
  if (!policies) return fail(policies.status());
  if (options.dynamic) return run_dynamic_density_job(options, *policies, *seeds);
  // Everything that can fail after the runs is checked before them.
  const std::filesystem::path out_dir(options.out_dir);
  if (auto st = density::prepare_output(out_dir); !st.is_ok()) return fail(st);
  std::error_code ec;
  std::filesystem::remove(out_dir / "compare.md", ec);  // never leave a comparison from an earlier run
  if (!options.published.empty()) {
    if (auto check = density::compare_published(options.published, "", options.tune, {}); !check) return fail(check.status());
  }
  auto trace = density::load_trace(options.nodes_csv, options.pods_csv);
  if (!trace) return fail(trace.status());
  for (const auto& warning : density::trace_warnings(*trace)) fmt::print(stderr, "warning: {}\n", warning);
  density::GridOptions grid;
  grid.policies = std::move(*policies);
  grid.seeds = *seeds;
  grid.ratio = options.tune;
  const std::size_t run_count = grid.policies.size() * grid.seeds.size();
  grid.jobs = static_cast<unsigned>(std::min<std::size_t>(
      run_count, options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency())));
  auto bar = std::make_shared<ProgressBar>("runs");
  if (options.progress && stderr_is_terminal()) {
    grid.progress = [bar](std::size_t done, std::size_t total) { bar->update(done, total); };
  }
  fmt::print(stderr, "{}: {} nodes, {} GPUs, {} pods, {} typical shape{}; {} run{} on {} thread{}\n", trace->workload,
             trace->nodes.size(), trace->gpus, trace->pods.size(), trace->typical.size(), trace->typical.size() == 1 ? "" : "s",
             run_count, run_count == 1 ? "" : "s",
             grid.jobs, grid.jobs == 1 ? "" : "s");
  auto runs = density::run_grid(*trace, grid);
  if (!runs) return fail(Status(runs.status().code(), "--policy: " + runs.status().message()));
  if (auto st = density::write_report(out_dir, *trace, options.tune, *runs); !st.is_ok()) return fail(st);
  fmt::print("{}\n", density::summary_table(*runs));
  if (!options.published.empty()) {
    auto compared = density::compare_published(options.published, trace->workload, options.tune, *runs);
    if (!compared) return fail(compared.status());
    fmt::print("{}", *compared);
    std::ofstream(out_dir / "compare.md") << *compared;
  }
  fmt::print("wrote {}/allo.csv, frag_ratio.csv, summary.md, allocation.svg{}\n", options.out_dir,
             options.published.empty() ? "" : ", compare.md");
  return 0;
}

}  // namespace fracpack
