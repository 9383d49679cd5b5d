#include "fracpack/queues/reclaim.hpp"

#include <algorithm>
#include <map>

#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack::queues {
namespace {


bool fits_on(ClusterState& state, const PodRequest& pod, const Policy& policy, std::size_t node) {
  NodeMask only(state.node_count(), false);
  only[node] = true;
  return select(state, pod, policy, &only).has_value();
}

/// KAI CanReclaimResources, along the whole path: the reclaimer's queue and every ancestor stay
/// within fair share holding the pod (and within quota for non-preemptible work).
bool may_reclaim(const QueueBook& book, std::size_t queue, const Amounts& charge, bool preemptible) {
  for (std::size_t q : book.tree().path_to_root(queue)) {
    if (!book.within_fair_share(q, charge)) return false;
    if (!preemptible) {
      for (Resource r : kResources) {
        const std::int64_t quota = book.tree().queue(q).resource(r).quota;
        if (charge[r] > 0 && quota != kUnlimited && book.allocated_non_preemptible(q)[r] + charge[r] > quota) return false;
      }
    }
  }
  return true;
}

/// The victim's queue at the level where its branch meets the reclaimer's (KAI getLeveledQueues).
std::size_t leveled(const QueueTree& tree, std::size_t reclaimer, std::size_t victim) {
  auto mine = tree.path_to_root(reclaimer);
  auto theirs = tree.path_to_root(victim);
  std::reverse(mine.begin(), mine.end());
  std::reverse(theirs.begin(), theirs.end());
  for (std::size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i) {
    if (mine[i] != theirs[i]) return theirs[i];
  }
  return theirs.back();
}

/// Min-runtime protection within one search (the reclaimer is fixed): each victim queue's min
/// runtime resolved once, and the earliest lapse of a shielded candidate reported.
struct MinRuntimes {
  const QueueTree& tree;
  std::optional<std::size_t> reclaimer;
  const VictimShield& shield;
  std::map<std::pair<std::optional<std::size_t>, bool>, std::chrono::nanoseconds> resolved;

  bool shields(const Allocation& a, bool preemption, std::optional<std::size_t> victim) {
    auto [it, fresh] = resolved.try_emplace({victim, preemption});
    if (fresh) {
      if (!victim) {
        it->second = preemption ? shield.defaults.preempt : shield.defaults.reclaim;
      } else {
        it->second = preemption ? preempt_min_runtime(tree, *victim, shield.defaults)
                                : reclaim_min_runtime(tree, *reclaimer, *victim, shield.defaults);
      }
    }
    if (!shielded(a.started, it->second, shield.now)) return false;
    if (shield.lapse != nullptr) {
      const std::int64_t lapse = shield_lapse(*a.started, it->second);
      if (!*shield.lapse || lapse < **shield.lapse) *shield.lapse = lapse;
    }
    return true;
  }
};

}  // namespace

std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes) {
  const QueueTree& tree = book.tree();
  // Over its queue's quota a non-preemptible pod stays refused whatever is evicted (every victim
  // is preemptible, and only non-preemptible pods count against that quota).
  if (queue && !pod.preemptible && !book.non_preemptible_fits(*queue, charge)) return std::nullopt;
  const bool reclaim = queue && may_reclaim(book, *queue, charge, pod.preemptible);
  struct Candidate {
    Allocation allocation;
    std::optional<std::size_t> level;  ///< the victim's leveled queue (reclaim); nullopt: same queue
    Amounts give_back;
  };
  MinRuntimes min_runtimes{tree, queue, shield, {}};
  // Candidates node by node, each node's in key order (pods_on() keeps arrival order).
  std::vector<std::pair<std::size_t, std::vector<Candidate>>> by_node;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    if (nodes != nullptr && !(*nodes)[n]) continue;
    std::vector<Candidate> here;
    for (const std::string& key : state.pods_on(n)) {
      const Allocation& a = *state.allocation(key);
      if (a.holder != Holder::kScheduled || !a.preemptible) continue;
      const bool preemption = a.queue == pod.queue;
      if (preemption && a.priority >= pod.priority) continue;  // preemption: lower priority of the same queue only
      const auto victim_queue = tree.find(a.queue);  // after the cheap test: most candidates stop there
      if (!preemption && (!reclaim || !victim_queue)) continue;
      if (a.started && min_runtimes.shields(a, preemption, victim_queue)) continue;
      Candidate c{a, std::nullopt, charge_of_allocation(state, a)};
      if (!preemption) c.level = leveled(tree, *queue, *victim_queue);
      here.push_back(std::move(c));
    }
    if (here.empty()) continue;
    std::sort(here.begin(), here.end(), [](const Candidate& a, const Candidate& b) { return a.allocation.pod < b.allocation.pod; });
    by_node.emplace_back(n, std::move(here));
  }

  std::optional<Victims> best;
  for (auto& [node, candidates] : by_node) {
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.allocation.choice.memory_held() > b.allocation.choice.memory_held();
    });
    std::map<std::size_t, Amounts> taken;  // per leveled queue, what the chosen victims give back
    auto still_over = [&](const Candidate& c) {
      if (!c.level) return true;
      const Amounts after = book.allocated(*c.level) - taken[*c.level] - c.give_back;
      for (Resource r : kResources) {
        if (charge[r] > 0 && after[r] >= book.fair_share(*c.level)[r] && book.allocated(*c.level)[r] > book.fair_share(*c.level)[r]) {
          return true;
        }
      }
      return false;
    };
    std::vector<Candidate> removed;
    bool fits = false;
    for (const Candidate& c : candidates) {
      if (!still_over(c)) continue;
      removed.push_back(c);
      if (c.level) taken[*c.level] += c.give_back;
      state.take(c.allocation.pod);
      if (fits_on(state, pod, policy, node)) {
        fits = true;
        break;
      }
    }
    if (fits) {
      // Put back every victim the pod does not need, smallest first.
      for (std::size_t i = removed.size(); i-- > 0;) {
        state.restore(removed[i].allocation);
        if (fits_on(state, pod, policy, node)) {
          removed.erase(removed.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          state.take(removed[i].allocation.pod);
        }
      }
      Victims v;
      v.node = state.node(node).name;
      for (const Candidate& c : removed) {
        v.pods.push_back(c.allocation.pod);
        v.gpu_memory += c.allocation.choice.memory_held();
      }
      std::sort(v.pods.begin(), v.pods.end());
      const auto better = [](const Victims& x, const Victims& y) {
        if (x.pods.size() != y.pods.size()) return x.pods.size() < y.pods.size();
        if (x.gpu_memory != y.gpu_memory) return x.gpu_memory < y.gpu_memory;
        return x.node < y.node;
      };
      if (!best || better(v, *best)) best = std::move(v);
    }
    for (Candidate& c : removed) state.restore(std::move(c.allocation));
  }
  return best;
}

}  // namespace fracpack::queues
