// Policies × seeds on a few threads. Each run owns its ledger; the trace is shared read-only.
#include <mutex>

#include "core/parallel.hpp"
#include "fracpack/sim/density.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::density {

Result<std::vector<RunResult>> run_grid(const Trace& trace, const GridOptions& options) {
  struct Job {
    std::string policy;
    std::uint64_t seed;
  };
  std::vector<Job> jobs;
  for (const auto& p : options.policies) {
    PolicyOptions check;
    check.workload = std::make_shared<const std::vector<TypicalPod>>(trace.typical);
    if (auto made = make_policy(p, check); !made) return made.status();  // unknown names fail before any run
    for (auto s : options.seeds) jobs.push_back({p, s});
  }
  std::vector<std::optional<Result<RunResult>>> results(jobs.size());
  std::mutex mu;
  std::size_t done = 0;
  parallel_for(jobs.size(), options.jobs, [&](std::size_t i) {
    auto r = run(trace, jobs[i].policy, jobs[i].seed, options.ratio);
    std::lock_guard lock(mu);
    results[i].emplace(std::move(r));
    ++done;
    if (options.progress) options.progress(done, jobs.size());
  });
  std::vector<RunResult> out;
  for (auto& r : results) {
    if (!r->is_ok()) return r->status();
    out.push_back(std::move(**r));
  }
  return out;
}

}  // namespace fracpack::density
