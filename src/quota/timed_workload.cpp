#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fracpack/sim/quota/workload.hpp"

namespace fracpack::quota {

Result<TimedWorkload> timed_workload(const std::vector<trace::TracePod>& pods, const RuleSet& rules) {
  TimedWorkload out;
  std::map<const QueueRule*, std::size_t> used;
  std::size_t by_default = 0;
  for (const auto& p : pods) {
    const QueueRule* rule = match(rules, p);
    if (rule == nullptr) {
      return invalid_argument("pod {} (qos {}): no rule matches it and the rule file has no `default`", p.name,
                              p.qos.empty() ? "none" : p.qos);
    }
    ++used[rule];
    if (rules.fallback && rule == &*rules.fallback) ++by_default;
    TimedPod t;
    t.pod = trace::to_pod_request(p);
    t.pod.queue = rule->queue;
    t.pod.preemptible = rule->preemptible;
    t.pod.priority = rule->priority;
    t.arrival = p.creation_time;
    if (p.deletion_time) {
      const std::int64_t start = p.scheduled_time.value_or(p.creation_time);
      if (start < p.creation_time || *p.deletion_time < start) {
        return invalid_argument("pod {}: times run backwards (creation {}, scheduled {}, deletion {})", p.name, p.creation_time,
                                p.scheduled_time ? std::to_string(*p.scheduled_time) : "none", *p.deletion_time);
      }
      t.run_seconds = *p.deletion_time - start;
    }
    out.pods.push_back(std::move(t));
  }
  std::stable_sort(out.pods.begin(), out.pods.end(), [](const TimedPod& a, const TimedPod& b) {
    return a.arrival != b.arrival ? a.arrival < b.arrival : a.pod.name < b.pod.name;
  });
  for (const auto& r : rules.rules) {
    if (used.count(&r) == 0) out.warnings.push_back(fmt::format("{} (queue {}) matches no pod", r.where, r.queue));
  }
  if (by_default > 0) {
    out.warnings.push_back(fmt::format("{} pods match no rule and go to the default queue {}", by_default, rules.fallback->queue));
  }
  return out;
}

}  // namespace fracpack::quota
