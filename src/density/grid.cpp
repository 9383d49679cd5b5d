// Policies × seeds on a few threads. Each run owns its ledger; the trace is shared read-only.
#include "density/run_all.hpp"
#include "fracpack/sim/density.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::density {

Result<std::vector<RunResult>> run_grid(const Trace& trace, const GridOptions& options) {
  struct Job {
    std::string policy;
    std::uint64_t seed;
  };
  if (Status st = check_policies(options.policies, trace.typical); !st.is_ok()) return st;  // before any run
  std::vector<Job> jobs;
  for (const auto& p : options.policies) {
    for (auto s : options.seeds) jobs.push_back({p, s});
  }
  return run_all<RunResult>(jobs.size(), options.jobs, options.progress,
                            [&](std::size_t i) { return run(trace, jobs[i].policy, jobs[i].seed, options.ratio); });
}

}  // namespace fracpack::density
