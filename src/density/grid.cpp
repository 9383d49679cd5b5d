// Policies × seeds on a few threads. Each run owns its ledger; the trace is shared read-only.
#include <atomic>
#include <mutex>
#include <thread>

#include "fracpack/density.hpp"
#include "fracpack/policy.hpp"

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
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::size_t done = 0;
  auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      auto r = run(trace, jobs[i].policy, jobs[i].seed, options.ratio);
      std::lock_guard lock(mu);
      results[i].emplace(std::move(r));
      ++done;
      if (options.progress) options.progress(done, jobs.size());
    }
  };
  const unsigned threads = std::max(1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(jobs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  std::vector<RunResult> out;
  for (auto& r : results) {
    if (!r->is_ok()) return r->status();
    out.push_back(std::move(**r));
  }
  return out;
}

}  // namespace fracpack::density
