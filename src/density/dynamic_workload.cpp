// The dynamic protocol's workload (density_dynamic.hpp): the static protocol's pods with their
// trace times, clones placed in time like the trace's arrivals, arrivals compressed to a load.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <fmt/format.h>

#include "density/uniform.hpp"
#include "fracpack/sim/density_dynamic.hpp"

namespace fracpack::density {
namespace {

/// Seeds the clones' arrival draws apart from inflate()'s stream.
constexpr std::uint64_t kArrivalStream = 0x9e3779b97f4a7c15ULL;

/// The queue rule every pod of the run goes by: one queue, preemptible, KAI's "train" priority.
quota::RuleSet one_queue() {
  quota::RuleSet rules;
  quota::QueueRule r;
  r.queue = "fleet";
  r.preemptible = true;
  r.priority = 50;
  r.where = "the dynamic protocol's queue";
  rules.fallback = r;
  return rules;
}

/// The pod list inflated for `seed`, clones moved in time to a drawn pod's creation (with their
/// own scheduled and deletion times moved alike, so their run time is their original's).
std::vector<trace::TracePod> timed_pods(const Trace& trace, std::uint64_t seed, double tune,
                                        std::vector<std::size_t>& index) {
  index = inflate(trace.pods, trace.gpus * 1000, tune, seed);
  std::mt19937_64 rng(seed ^ kArrivalStream);
  std::vector<trace::TracePod> out;
  out.reserve(index.size());
  for (std::size_t k = 0; k < index.size(); ++k) {
    trace::TracePod p = trace.pods[index[k]];
    if (k >= trace.pods.size()) {
      p.name += fmt::format("-tuned-{}", k);
      const std::int64_t shift = trace.pods[uniform(rng, trace.pods.size())].creation_time - p.creation_time;
      p.creation_time += shift;
      if (p.deletion_time) *p.deletion_time += shift;
      if (p.scheduled_time) *p.scheduled_time += shift;
    }
    out.push_back(std::move(p));
  }
  return out;
}

/// Arrival times (seconds since the first arrival) divided by `compression`, floored.
std::vector<std::int64_t> compressed(const std::vector<quota::TimedPod>& pods, std::int64_t first, double compression) {
  std::vector<std::int64_t> out;
  out.reserve(pods.size());
  for (const auto& p : pods) out.push_back(static_cast<std::int64_t>(std::floor(static_cast<double>(p.arrival - first) / compression)));
  return out;
}

/// Offered demand over time: (time, ±milli-GPU) of every GPU pod's arrival and end, as if each
/// started on arrival (a pod without a run time runs to the end), in time order, ends first.
std::vector<std::pair<std::int64_t, std::int64_t>> demand_steps(const std::vector<quota::TimedPod>& pods,
                                                                const std::vector<std::int64_t>& gpus,
                                                                const std::vector<std::int64_t>& arrivals) {
  std::vector<std::pair<std::int64_t, std::int64_t>> events;
  events.reserve(pods.size() * 2);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    if (gpus[i] == 0) continue;
    events.emplace_back(arrivals[i], gpus[i]);
    if (pods[i].run_seconds) events.emplace_back(arrivals[i] + *pods[i].run_seconds, -gpus[i]);
  }
  std::sort(events.begin(), events.end());
  return events;
}

/// The offered demand's mean (milli-GPU) over [from, to] (at least one second): each GPU pod's
/// GPUs times the part of [from, to] between its arrival and its end (no run time: to the end).
/// O(pods), for the bisection; demand_over() gives the same with the peak.
double mean_demand(const std::vector<quota::TimedPod>& pods, const std::vector<std::int64_t>& gpus,
                   const std::vector<std::int64_t>& arrivals, std::int64_t from, std::int64_t to) {
  to = std::max(to, from + 1);
  double area = 0;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    if (gpus[i] == 0) continue;
    const std::int64_t begin = std::max(arrivals[i], from);
    const std::int64_t end = pods[i].run_seconds ? std::min(arrivals[i] + *pods[i].run_seconds, to) : to;
    if (end > begin) area += static_cast<double>(gpus[i]) * static_cast<double>(end - begin);
  }
  return area / static_cast<double>(to - from);
}

struct Demand {
  double mean = 0;  ///< milli-GPU, time average over the window
  double peak = 0;  ///< milli-GPU, the most at any moment
};

/// The offered demand's mean over [from, to] (at least one second) and its peak.
Demand demand_over(const std::vector<std::pair<std::int64_t, std::int64_t>>& steps, std::int64_t from, std::int64_t to) {
  to = std::max(to, from + 1);
  Demand d;
  double area = 0;
  std::int64_t now = 0;
  std::int64_t at = from;
  for (const auto& [time, delta] : steps) {
    if (time > at && at < to) {
      const std::int64_t until = std::min(time, to);
      area += static_cast<double>(now) * static_cast<double>(until - at);
      at = until;
    }
    now += delta;
    d.peak = std::max(d.peak, static_cast<double>(now));
  }
  if (at < to) area += static_cast<double>(now) * static_cast<double>(to - at);
  d.mean = area / static_cast<double>(to - from);
  return d;
}

}  // namespace

Result<DynamicWorkload> dynamic_workload(const Trace& trace, std::uint64_t seed, const DynamicOptions& options) {
  const bool timed = std::any_of(trace.pods.begin(), trace.pods.end(), [](const auto& p) { return p.deletion_time.has_value(); });
  if (!timed) {
    return invalid_argument("{}: the pod list carries no deletion times (the multigpu* lists have only five columns); the "
                            "dynamic protocol needs creation_time and deletion_time",
                            trace.workload);
  }
  if (!(options.load > 0) || !(options.load < options.tune)) {
    return invalid_argument("--load {}: the offered demand must be above 0 and below --tune {} (all pods at once); raise --tune",
                            options.load, options.tune);
  }
  DynamicWorkload out;
  const std::vector<trace::TracePod> pods = timed_pods(trace, seed, options.tune, out.trace_index);
  auto workload = quota::timed_workload(pods, one_queue());
  if (!workload) return workload.status();
  // Each replayed pod's place in the inflated list (the workload is in arrival order).
  std::map<std::string, std::size_t, std::less<>> position;
  for (std::size_t k = 0; k < pods.size(); ++k) position.emplace(pods[k].name, k);
  std::vector<std::size_t> index(workload->pods.size());
  std::vector<std::int64_t> gpus(workload->pods.size());
  for (std::size_t i = 0; i < workload->pods.size(); ++i) {
    const std::size_t k = position.at(workload->pods[i].pod.name);
    index[i] = out.trace_index[k];
    gpus[i] = pods[k].gpu_total().count();
  }
  out.trace_index = std::move(index);
  const std::int64_t first = workload->pods.front().arrival;
  // The window the load is measured over: from the 5th percentile of arrivals (the trace's first
  // months hold a handful of long-running pods) to the last arrival.
  const std::size_t fifth = workload->pods.size() / 20;
  const auto at = [&](double log_compression) {
    const std::vector<std::int64_t> arrivals = compressed(workload->pods, first, std::pow(10.0, log_compression));
    return mean_demand(workload->pods, gpus, arrivals, arrivals[fifth], arrivals.back());
  };
  const double target = options.load * static_cast<double>(trace.gpus) * 1000.0;
  // The compression whose mean offered demand over the window is the target, by bisection on its
  // logarithm (more compression, more pods at once).
  double lo = 0;  // 10^0: the trace's own times
  double hi = 9;  // 10^9: a year of arrivals in 30 ms
  if (at(hi) < target) {
    return invalid_argument("--load {}: even arriving at once the pods' offered demand stays below it on average (runs end "
                            "first); raise --tune",
                            options.load);
  }
  for (int i = 0; i < 40; ++i) {
    const double mid = (lo + hi) / 2;
    (at(mid) >= target ? hi : lo) = mid;
  }
  out.compression = std::pow(10.0, hi);
  const std::vector<std::int64_t> arrivals = compressed(workload->pods, first, out.compression);
  const Demand d = demand_over(demand_steps(workload->pods, gpus, arrivals), arrivals[fifth], arrivals.back());
  const double capacity = 1000.0 * static_cast<double>(trace.gpus);
  out.mean_demand = d.mean / capacity;
  out.peak_demand = d.peak / capacity;
  out.window_start = arrivals[fifth];
  out.window_end = arrivals.back();
  for (std::size_t i = 0; i < workload->pods.size(); ++i) workload->pods[i].arrival = arrivals[i];
  out.workload = std::move(*workload);
  return out;
}

}  // namespace fracpack::density
