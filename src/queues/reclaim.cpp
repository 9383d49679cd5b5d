// Reclaim and preemption victims, searched in KAI's victim order (reclaim.hpp).
#include "fracpack/queues/reclaim.hpp"

#include <algorithm>
#include <map>

#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/reclaimable.hpp"
#include "queues/victim_order.hpp"

namespace fracpack::queues {
namespace {

bool fits_on(ClusterState& state, const PodRequest& pod, const Policy& policy, std::size_t node) {
  NodeMask only(state.node_count(), false);
  only[node] = true;
  return select(state, pod, policy, &only).has_value();
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

/// One pass of the search: reclaim (other queues' pods) or preemption (the pod's own queue's).
struct Pass {
  ClusterState& state;
  const QueueBook& book;
  const PodRequest& pod;
  const Reclaimer& reclaimer;
  bool reclaim;
  MinRuntimes& min_runtimes;

  /// KAI's victim filters: preemptible, scheduled by us, not shielded; reclaim: another queue
  /// may_take_from allows; preemption: the pod's own queue, lower priority.
  [[nodiscard]] std::vector<Candidate> candidates(const NodeMask* nodes) const {
    const QueueTree& tree = book.tree();
    std::map<std::size_t, bool> allowed;  // per victim queue: may_take_from, asked once
    std::vector<Candidate> out;
    for (std::size_t n = 0; n < state.node_count(); ++n) {
      if (nodes != nullptr && !(*nodes)[n]) continue;
      for (const std::string& key : state.pods_on(n)) {
        const Allocation& a = *state.allocation(key);
        if (a.holder != Holder::kScheduled || !a.preemptible) continue;
        if ((a.queue == pod.queue) == reclaim) continue;
        if (!reclaim && a.priority >= pod.priority) continue;
        const auto victim_queue = tree.find(a.queue);  // after the cheap tests: most candidates stop there
        if (reclaim) {
          if (!victim_queue) continue;
          auto [it, fresh] = allowed.try_emplace(*victim_queue, false);
          if (fresh) it->second = may_take_from(book, reclaimer, *victim_queue);
          if (!it->second) continue;
        }
        if (a.started && min_runtimes.shields(a, !reclaim, victim_queue)) continue;
        out.push_back({a, victim_queue, charge_of_allocation(state, a)});
      }
    }
    return out;
  }

  /// Takes candidates in victim order until the pod fits on the node of the last one taken (and,
  /// for reclaim, the victims there are a valid reclaim). The ledger ends as it began.
  std::optional<Victims> search(const Policy& policy, std::vector<Candidate> found) {
    VictimOrder order(book, std::move(found));
    std::vector<std::size_t> taken;
    std::optional<Victims> answer;
    while (!answer && !order.empty()) {
      const std::size_t i = order.pop();
      const Candidate& c = order.candidates()[i];
      state.take(c.allocation.pod);
      taken.push_back(i);
      if (fits_on(state, pod, policy, c.allocation.node)) answer = victims_on(order, taken, c.allocation.node);
    }
    for (std::size_t k = taken.size(); k-- > 0;) state.restore(order.candidates()[taken[k]].allocation);
    return answer;
  }

  [[nodiscard]] std::optional<Victims> victims_on(const VictimOrder& order, const std::vector<std::size_t>& taken,
                                                  std::size_t node) const {
    Victims v;
    v.node = state.node(node).name;
    std::vector<Release> releases;
    for (std::size_t i : taken) {
      const Candidate& c = order.candidates()[i];
      if (c.allocation.node != node) continue;
      v.pods.push_back(c.allocation.pod);
      v.gpu_memory += c.allocation.choice.memory_held();
      if (reclaim) releases.push_back({*c.queue, c.give_back});
    }
    if (reclaim && !reclaimable(book, reclaimer, releases)) return std::nullopt;
    std::sort(v.pods.begin(), v.pods.end());
    return v;
  }
};

}  // namespace

std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes) {
  // Over its queue's quota a non-preemptible pod stays refused whatever is evicted (every victim
  // is preemptible, and only non-preemptible pods count against that quota).
  if (queue && !pod.preemptible && !book.non_preemptible_fits(*queue, charge)) return std::nullopt;
  const Reclaimer reclaimer{queue.value_or(0), charge, pod.preemptible};
  MinRuntimes min_runtimes{book.tree(), queue, shield, {}};
  for (const bool reclaim : {true, false}) {  // KAI's cycle: reclaim, then preempt
    if (reclaim && (!queue || !can_reclaim(book, reclaimer))) continue;
    Pass pass{state, book, pod, reclaimer, reclaim, min_runtimes};
    std::vector<Candidate> found = pass.candidates(nodes);
    if (found.empty()) continue;
    if (auto victims = pass.search(policy, std::move(found))) return victims;
  }
  return std::nullopt;
}

}  // namespace fracpack::queues
