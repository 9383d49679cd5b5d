#include "jobs/density_dynamic_job.hpp"

#include <algorithm>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "fracpack/core/progress.hpp"
#include "fracpack/sim/density_dynamic.hpp"

namespace fracpack {

int run_dynamic_density_job(const DensityJobOptions& options, const std::vector<std::string>& policies,
                            const std::vector<std::uint64_t>& seeds) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack bench density --dynamic: {}\n", st.message());
    return 2;
  };
  auto loads = parse_loads(options.loads);
  if (!loads) return fail(loads.status());
  if (!options.published.empty()) return fail(invalid_argument("--published: the study published no dynamic runs"));
  const std::filesystem::path out_dir(options.out_dir);
  if (auto st = density::prepare_output(out_dir); !st.is_ok()) return fail(st);
  auto trace = density::load_trace(options.nodes_csv, options.pods_csv);
  if (!trace) return fail(trace.status());
  for (const auto& warning : density::trace_warnings(*trace)) fmt::print(stderr, "warning: {}\n", warning);
  density::DynamicGridOptions grid;
  grid.policies = policies;
  grid.seeds = seeds;
  grid.loads = *loads;
  grid.tune = options.tune;
  grid.max_moves_per_hour = options.max_moves_per_hour;
  grid.consolidation = options.consolidation == "both" ? std::vector<bool>{false, true}
                                                       : std::vector<bool>{options.consolidation == "on"};
  // Every load is checked against the list before any run.
  for (double load : grid.loads) {
    if (auto w = density::dynamic_workload(*trace, seeds.front(), {grid.tune, load, false, 0}); !w) return fail(w.status());
  }
  const std::size_t run_count = grid.loads.size() * policies.size() * grid.consolidation.size() * seeds.size();
  grid.jobs = static_cast<unsigned>(std::min<std::size_t>(
      run_count, options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency())));
  auto bar = std::make_shared<ProgressBar>("runs");
  if (options.progress && stderr_is_terminal()) {
    grid.progress = [bar](std::size_t done, std::size_t total) { bar->update(done, total); };
  }
  fmt::print(stderr, "{}: {} nodes, {} GPUs, {} pods; {} dynamic run{} on {} thread{}\n", trace->workload, trace->nodes.size(),
             trace->gpus, trace->pods.size(), run_count, run_count == 1 ? "" : "s", grid.jobs, grid.jobs == 1 ? "" : "s");
  auto runs = density::run_dynamic_grid(*trace, grid);
  if (!runs) return fail(runs.status());
  if (auto st = density::write_dynamic_report(out_dir, *trace, *runs); !st.is_ok()) return fail(st);
  fmt::print("{}\n", density::dynamic_summary_table(*runs));
  fmt::print("wrote {}/runs.csv, summary.md, allocation-*.svg\n", options.out_dir);
  return 0;
}

}  // namespace fracpack
