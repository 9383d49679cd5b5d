#include "fracpack/queues/min_runtime.hpp"

#include <algorithm>
#include <vector>

namespace fracpack::queues {
namespace {

using std::chrono::nanoseconds;

/// From `path[from]` up to path[0] (path runs from the top-level queue down), the first queue
/// that sets `field`; `fallback` when none does.
nanoseconds first_set_upwards(const QueueTree& tree, const std::vector<std::size_t>& path, std::size_t from,
                              std::optional<nanoseconds> QueueSpec::*field, nanoseconds fallback) {
  for (std::size_t i = from + 1; i-- > 0;) {
    if (const auto& set = tree.queue(path[i]).*field) return *set;
  }
  return fallback;
}

/// `q`'s ancestors and `q`, from its top-level queue down.
std::vector<std::size_t> path_from_top(const QueueTree& tree, std::size_t q) {
  std::vector<std::size_t> path = tree.path_to_root(q);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

std::optional<ReclaimMinRuntimeResolve> parse_reclaim_min_runtime_resolve(std::string_view text) {
  if (text == "lca") return ReclaimMinRuntimeResolve::kLowestCommonAncestor;
  if (text == "queue") return ReclaimMinRuntimeResolve::kVictimQueue;
  return std::nullopt;
}

nanoseconds preempt_min_runtime(const QueueTree& tree, std::size_t victim, const MinRuntimeDefaults& defaults) {
  const auto path = path_from_top(tree, victim);
  return first_set_upwards(tree, path, path.size() - 1, &QueueSpec::preempt_min_runtime, defaults.preempt);
}

nanoseconds reclaim_min_runtime(const QueueTree& tree, std::size_t reclaimer, std::size_t victim, const MinRuntimeDefaults& defaults) {
  const auto theirs = path_from_top(tree, victim);
  if (defaults.reclaim_resolve == ReclaimMinRuntimeResolve::kVictimQueue) {
    return first_set_upwards(tree, theirs, theirs.size() - 1, &QueueSpec::reclaim_min_runtime, defaults.reclaim);
  }
  const auto mine = path_from_top(tree, reclaimer);
  // Different top-level queues meet at an implicit root: one step below it is the victim's
  // top-level queue, and nothing is above that.
  if (mine.front() != theirs.front()) {
    return tree.queue(theirs.front()).reclaim_min_runtime.value_or(defaults.reclaim);
  }
  std::size_t lca = 0;
  while (lca + 1 < std::min(mine.size(), theirs.size()) && mine[lca + 1] == theirs[lca + 1]) ++lca;
  const std::size_t below = std::min(lca + 1, theirs.size() - 1);  // one step towards the victim, if there is one
  return first_set_upwards(tree, theirs, below, &QueueSpec::reclaim_min_runtime, defaults.reclaim);
}

bool shielded(std::optional<std::int64_t> started, nanoseconds min_runtime, std::int64_t now) {
  // No min runtime shields nothing, whatever the start says (a kubelet's clock ahead of ours).
  if (!started || min_runtime <= nanoseconds(0)) return false;
  // now < started + min runtime, without overflow: compare the time run with the min runtime.
  constexpr std::int64_t kLongest = INT64_MAX / 1'000'000'000;  // ±292 years: beyond any min runtime
  std::int64_t ran = 0;
  if (__builtin_sub_overflow(now, *started, &ran)) return *started > now;  // centuries apart: shielded only if ahead
  if (ran >= kLongest) return false;
  if (ran <= -kLongest) return true;
  return nanoseconds(std::chrono::seconds(ran)) < min_runtime;
}

std::int64_t shield_lapse(std::int64_t started, nanoseconds min_runtime) {
  const std::int64_t length = std::chrono::ceil<std::chrono::seconds>(min_runtime).count();
  std::int64_t lapse = 0;
  return __builtin_add_overflow(started, length, &lapse) ? INT64_MAX : lapse;
}

}  // namespace fracpack::queues
