// One dynamic density run (density_dynamic.hpp) through the queue replay, and the grid of them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "density/run_all.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/sim/density_dynamic.hpp"
#include "fracpack/sim/quota/metrics.hpp"
#include "fracpack/sim/quota/replay.hpp"

namespace fracpack::density {
namespace {

/// The one queue every pod is in: no quota, no limit, in every resource.
queues::QueueSpec fleet() {
  queues::QueueSpec q;
  q.name = "fleet";
  for (queues::Resource r : queues::kResources) q.resource(r) = {queues::kUnlimited, queues::kUnlimited, 1000, true};
  return q;
}

/// Mean of a step function (value from each point to the next) over [from, to].
double time_mean(const std::vector<std::array<double, 4>>& timeline, std::size_t column, double from, double to) {
  if (!(to > from)) return timeline.empty() ? 0 : timeline.front()[column];
  double area = 0;
  for (std::size_t k = 0; k < timeline.size(); ++k) {
    const double begin = std::max(from, timeline[k][0]);
    const double end = std::min(to, k + 1 < timeline.size() ? timeline[k + 1][0] : to);
    if (end > begin) area += timeline[k][column] * (end - begin);
  }
  return area / (to - from);
}

/// Pending time per shape class: p95 and pending GPU-hours over the pods that started, and how
/// many never did.
void waits_by_shape(const Trace& trace, const DynamicWorkload& w, const quota::ReplayReport& report, DynamicRun& run) {
  std::map<std::string, std::vector<std::int64_t>> waits;
  for (std::size_t i = 0; i < report.pods.size(); ++i) {
    const trace::TracePod& pod = trace.pods[w.trace_index[i]];
    const quota::PodOutcome& o = report.pods[i];
    ShapeWaits& s = run.by_shape[shape_class(pod)];
    ++s.pods;
    if (!o.first_start) {
      ++s.never_started;
      ++run.never_started;
      continue;
    }
    const double gpu_hours = static_cast<double>(pod.gpu_total().count()) / 1000.0 * static_cast<double>(o.pending_seconds) / 3600.0;
    s.pending_gpu_hours += gpu_hours;
    run.pending_gpu_hours += gpu_hours;
    if (pod.num_gpu >= 2) run.pending_gpu_hours_multi += gpu_hours;
    waits[shape_class(pod)].push_back(o.pending_seconds);
  }
  for (auto& [shape, seconds] : waits) {
    std::sort(seconds.begin(), seconds.end());
    run.by_shape[shape].p95_seconds = quota::percentile(seconds, 0.95);
  }
}

/// The run of `policy` on `w` (dynamic_workload() of the trace, seed and options); `started`
/// is when the run began (its wall time counts from there).
Result<DynamicRun> run_on(const Trace& trace, const DynamicWorkload& w, std::string_view policy, std::uint64_t seed,
                          const DynamicOptions& options, std::chrono::steady_clock::time_point started) {
  quota::ReplayOptions ro;
  ro.policy = std::string(policy);
  ro.policy_seed = seed;
  ro.consolidation = options.consolidation;
  ro.max_moves_per_hour = options.max_moves_per_hour;
  ro.consolidation_limits.max_jobs = options.consolidation_jobs;
  ro.per_pod = true;
  ro.reasons = false;
  auto report = quota::replay(trace.nodes, {fleet()}, w.workload, ro);
  if (!report) return report.status();
  DynamicRun run;
  run.policy = std::string(policy);
  run.seed = seed;
  run.load = options.load;
  run.consolidation = options.consolidation;
  run.compression = w.compression;
  run.arrivals = static_cast<std::int64_t>(w.workload.pods.size());
  run.window_seconds = w.window_end - w.window_start;
  run.mean_demand = w.mean_demand;
  run.peak_demand = w.peak_demand;
  run.span_seconds = report->end - report->start;
  run.moves = report->moves;
  for (const auto& p : report->timeline) {
    const double pending = p.pending.empty() ? 0 : p.pending.front();
    run.timeline.push_back({static_cast<double>(p.time - report->start), p.cluster_allocated_pct, p.fragmentation_pct, pending});
  }
  const auto from = static_cast<double>(w.window_start - report->start);
  const auto to = static_cast<double>(w.window_end - report->start);
  run.window_from = from;
  run.window_to = to;
  run.allocation_window_pct = time_mean(run.timeline, 1, from, to);
  run.allocation_span_pct = time_mean(run.timeline, 1, 0, static_cast<double>(run.span_seconds));
  run.fragmentation_window_pct = time_mean(run.timeline, 2, from, to);
  waits_by_shape(trace, w, *report, run);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}


/// The workloads of a grid, one per load and seed: built by the first of its runs to need it
/// (the others wait for it) and dropped when the last is done. Its runs differ only in policy and
/// consolidation, which dynamic_workload() does not read (it reads the load and --tune), and
/// building the workload is a tenth of a run.
class SharedWorkloads {
 public:
  /// `uses`: how many runs use each (load, seed) slot.
  SharedWorkloads(std::size_t slots, int uses) : slots_(slots) {
    for (auto& s : slots_) s.left = uses;
  }
  /// The run of `policy` on slot `k`'s workload, built from `trace`, `seed` and `options` if first.
  Result<DynamicRun> run(std::size_t k, const Trace& trace, std::string_view policy, std::uint64_t seed,
                         const DynamicOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    Slot& s = slots_[k];
    std::call_once(s.built, [&] { s.workload.emplace(dynamic_workload(trace, seed, options)); });
    Result<DynamicRun> out = s.workload->is_ok() ? run_on(trace, **s.workload, policy, seed, options, started)
                                                 : Result<DynamicRun>(s.workload->status());
    if (--s.left == 0) s.workload.reset();  // the last run of the slot: nobody reads it any more
    return out;
  }

 private:
  struct Slot {
    std::once_flag built;
    std::optional<Result<DynamicWorkload>> workload;
    std::atomic<int> left{0};
  };
  std::vector<Slot> slots_;
};

}  // namespace

std::string shape_class(const trace::TracePod& pod) {
  if (pod.num_gpu == 0) return "cpu";
  if (pod.num_gpu == 1 && pod.gpu_milli.count() < 1000) return "share";
  return fmt::format("{}-gpu", pod.num_gpu);
}

Result<DynamicRun> run_dynamic(const Trace& trace, std::string_view policy, std::uint64_t seed, const DynamicOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto w = dynamic_workload(trace, seed, options);
  if (!w) return w.status();
  return run_on(trace, *w, policy, seed, options, started);
}

Result<std::vector<DynamicRun>> run_dynamic_grid(const Trace& trace, const DynamicGridOptions& options) {
  struct Job {
    std::size_t load;  ///< index in options.loads
    std::string policy;
    bool consolidation;
    std::size_t seed;  ///< index in options.seeds
  };
  if (Status st = check_policies(options.policies, trace.typical); !st.is_ok()) return st;  // before any run
  std::vector<Job> jobs;
  for (std::size_t l = 0; l < options.loads.size(); ++l) {
    for (const auto& p : options.policies) {
      for (bool c : options.consolidation) {
        for (std::size_t s = 0; s < options.seeds.size(); ++s) jobs.push_back({l, p, c, s});
      }
    }
  }
  // Run the four (or so) runs of one load and seed one after another, so that their workload is
  // built once and only a few are held at a time; the results stay in the grid's order.
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(jobs[a].load, jobs[a].seed) < std::tie(jobs[b].load, jobs[b].seed);
  });
  const std::size_t per_slot = options.policies.size() * options.consolidation.size();
  SharedWorkloads workloads(options.loads.size() * options.seeds.size(), static_cast<int>(per_slot));
  std::vector<std::optional<Result<DynamicRun>>> runs(jobs.size());  // by grid index: each run writes its own
  (void)run_all<bool>(jobs.size(), options.jobs, options.progress, [&](std::size_t k) -> Result<bool> {
    const Job& job = jobs[order[k]];
    DynamicOptions o{options.tune, options.loads[job.load], job.consolidation, options.max_moves_per_hour};
    o.consolidation_jobs = options.consolidation_jobs;
    runs[order[k]].emplace(workloads.run(job.load * options.seeds.size() + job.seed, trace, job.policy, options.seeds[job.seed], o));
    return true;
  });
  std::vector<DynamicRun> out;
  out.reserve(runs.size());
  for (auto& r : runs) {  // the first error in the grid's order, as before
    if (!r->is_ok()) return r->status();
    out.push_back(std::move(**r));
  }
  return out;
}

}  // namespace fracpack::density
