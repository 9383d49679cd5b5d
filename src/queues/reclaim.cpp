// Reclaim and preemption victims, searched in KAI's victim order (reclaim.hpp).
#include "fracpack/queues/reclaim.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/reclaimable.hpp"
#include "queues/ledger_journal.hpp"
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

/// The nodes a gang's minimum lands on once the candidates taken so far are gone (the ledger left
/// as it was), or nullopt when it does not fit.
std::optional<std::set<std::size_t>> gang_fits(ClusterState& state, const Gang& gang, const Policy& policy) {
  GangPlacer placer(state, gang, policy, 0);
  if (!placer.place_minimum()) return std::nullopt;
  std::set<std::size_t> nodes;
  for (const PlaceOutcome& o : placer.outcomes()) {
    if (o.placement) nodes.insert(*state.find_node(o.placement->node));
  }
  placer.undo_all(Explanation{});
  return nodes;
}

/// One pass of the search: reclaim (other queues' pods) or preemption (the pod's own queue's).
struct Pass {
  ClusterState& state;
  const QueueBook& book;
  const PodRequest& pod;
  const Gang* gang;
  const VictimReplacing* replacing;  ///< which victims may stay or run on elsewhere (null: none)
  const Reclaimer& reclaimer;
  bool reclaim;
  MinRuntimes& min_runtimes;

  /// KAI's victim filters for one pod: preemptible, scheduled by us, not shielded; reclaim:
  /// another queue may_take_from allows; preemption: the pod's own queue, lower priority. Its
  /// queue (nullopt inside: unknown to the tree), or nullopt when it may not be a victim.
  std::optional<std::optional<std::size_t>> eligible(const Allocation& a, std::map<std::size_t, bool>& allowed) const {
    if (a.holder != Holder::kScheduled || !a.preemptible) return std::nullopt;
    if ((a.queue == pod.queue) == reclaim) return std::nullopt;
    if (!reclaim && a.priority >= pod.priority) return std::nullopt;
    const auto victim_queue = book.tree().find(a.queue);  // after the cheap tests: most candidates stop there
    if (reclaim) {
      if (!victim_queue) return std::nullopt;
      auto [it, fresh] = allowed.try_emplace(*victim_queue, false);
      if (fresh) it->second = may_take_from(book, reclaimer, *victim_queue);
      if (!it->second) return std::nullopt;
    }
    if (a.started && min_runtimes.shields(a, !reclaim, victim_queue)) return std::nullopt;
    return victim_queue;
  }

  /// The candidates with a pod on `nodes` (all when null): single pods, and gang cores whose
  /// every member may be a victim (wherever it runs).
  [[nodiscard]] std::vector<Candidate> candidates(const NodeMask* nodes, const VictimJobs* jobs) const {
    std::map<std::size_t, bool> allowed;  // per victim queue: may_take_from, asked once
    std::map<std::string, std::vector<std::string>> cores;  // job → its core members
    if (jobs != nullptr) {
      for (const auto& [key, job] : *jobs) {
        if (job.core) cores[job.job].push_back(key);
      }
    }
    std::set<std::string> seen_cores;
    std::vector<Candidate> out;
    for (std::size_t n = 0; n < state.node_count(); ++n) {
      if (nodes != nullptr && !(*nodes)[n]) continue;
      for (const std::string& key : state.pods_on(n)) {
        const Allocation& a = *state.allocation(key);
        auto queue = eligible(a, allowed);
        if (!queue) continue;
        const auto in_job = jobs != nullptr ? jobs->find(key) : VictimJobs::const_iterator{};
        if (jobs != nullptr && in_job != jobs->end() && in_job->second.planned) continue;  // held for a plan, not running
        if (jobs == nullptr || in_job == jobs->end()) {
          out.push_back(unit({a}, *queue, key, true));
          continue;
        }
        if (!in_job->second.core) {
          out.push_back(unit({a}, *queue, in_job->second.job, false));
          out.back().sub_group = in_job->second.sub_group;
          out.back().sub_group_min = in_job->second.sub_group_min;
          out.back().sub_group_running = in_job->second.sub_group_running;
          continue;
        }
        if (!seen_cores.insert(in_job->second.job).second) continue;
        if (auto core = whole_core(cores[in_job->second.job], allowed)) out.push_back(unit(std::move(*core), *queue, in_job->second.job, true));
      }
    }
    return out;
  }

  /// A gang core's pods when every one may be a victim; nullopt otherwise (a job is evicted whole).
  std::optional<std::vector<Allocation>> whole_core(const std::vector<std::string>& members, std::map<std::size_t, bool>& allowed) const {
    std::vector<Allocation> pods;
    for (const std::string& key : members) {
      const Allocation* a = state.allocation(key);
      if (a == nullptr || !eligible(*a, allowed)) return std::nullopt;
      pods.push_back(*a);
    }
    return pods;
  }

  [[nodiscard]] Candidate unit(std::vector<Allocation> pods, std::optional<std::size_t> queue, std::string job, bool core) const {
    Candidate c;
    c.queue = queue;
    c.priority = pods.front().priority;
    c.job = std::move(job);
    c.core = core;
    for (const Allocation& a : pods) {
      c.give_back += charge_of_allocation(state, a);
      if (a.started && (!c.started || *a.started > *c.started)) c.started = a.started;
      if (a.started && (!c.job_started || *a.started < *c.job_started)) c.job_started = a.started;
    }
    c.pods = std::move(pods);
    return c;
  }

  /// Takes candidates in victim order until the pod fits on a node the last one ran on (the gang
  /// anywhere) and, for reclaim, the victims there are a valid reclaim. The ledger ends as it began.
  std::optional<Victims> search(const Policy& policy, std::vector<Candidate> found, const NodeMask* nodes) {
    VictimOrder order(book, std::move(found));
    LedgerJournal journal(state);
    std::vector<std::size_t> taken;
    std::optional<Victims> answer;
    while (!answer && !order.empty()) {
      const std::size_t i = order.pop();
      std::set<std::size_t> touched;
      for (const Allocation& a : order.candidates()[i].pods) {
        journal.take(a.pod);
        if (nodes == nullptr || (*nodes)[a.node]) touched.insert(a.node);
      }
      taken.push_back(i);
      if (gang != nullptr) {
        if (auto landed = gang_fits(state, *gang, policy)) answer = settle(policy, order, taken, *landed, journal);
        continue;
      }
      for (auto n = touched.begin(); !answer && n != touched.end(); ++n) {
        if (fits_on(state, pod, policy, *n)) answer = settle(policy, order, taken, {*n}, journal);
      }
    }
    return answer;
  }

  /// The pod's (the gang minimum's) placement on `nodes` as the ledger stands, reserved in
  /// `journal`; false (nothing held) when it does not fit.
  bool hold_reclaimer(const Policy& policy, const std::set<std::size_t>& nodes, LedgerJournal& journal,
                      std::vector<Placement>& placed) const {
    std::vector<std::pair<const PodRequest*, Placement>> where;
    if (gang == nullptr) {
      NodeMask mask(state.node_count(), false);
      for (std::size_t n : nodes) mask[n] = true;
      auto chosen = select(state, pod, policy, &mask);
      if (!chosen) return false;
      where.emplace_back(&pod, Placement{pod.key(), state.node(chosen->node).name, chosen->choice, 0});
    } else {
      GangPlacer placer(state, *gang, policy, 0);
      if (!placer.place_minimum()) return false;
      for (std::size_t m = 0; m < gang->members.size(); ++m) {
        if (const auto& p = placer.outcomes()[m].placement) where.emplace_back(&gang->members[m], *p);
      }
      placer.undo_all(Explanation{});
    }
    for (const auto& [member, p] : where) {
      if (!journal.reserve(*member, *state.find_node(p.node), p.choice)) return false;
      placed.push_back(p);
    }
    return true;
  }

  /// Whether a candidate can stay where it runs with the pod in place (all its pods on the GPUs
  /// they hold: it was not needed), reserved in `journal`. KAI evicts it and pipelines it back to
  /// the same place, which leaves it running.
  bool stays(const Candidate& c, LedgerJournal& journal) const {
    if (replacing == nullptr || !replacing->running) return false;
    const std::size_t mark = journal.mark();
    for (const Allocation& a : c.pods) {
      const PodRequest* victim = replacing->running(a);
      if (victim == nullptr || !journal.reserve(*victim, a.node, a.choice)) {
        journal.rollback(mark);
        return false;
      }
    }
    return true;
  }

  /// A victim placed again elsewhere with the pod in place (KAI pipelines a victim job that fits
  /// on the scenario's nodes), all its pods or none, reserved in `journal`; the moves, or nullopt.
  std::optional<std::vector<Move>> move_elsewhere(const Policy& policy, const Candidate& c, LedgerJournal& journal) const {
    if (replacing == nullptr || !replacing->movable) return std::nullopt;
    const std::size_t mark = journal.mark();
    std::vector<Move> moves;
    for (const Allocation& a : c.pods) {
      const PodRequest* victim = replacing->movable(a);
      auto to = victim != nullptr ? select(state, *victim, policy) : std::nullopt;
      if (!to || !journal.reserve(*victim, to->node, to->choice)) {
        journal.rollback(mark);
        return std::nullopt;
      }
      moves.push_back({a.pod, state.node(a.node).name, a.choice.gpus, state.node(to->node).name, to->choice, a.choice.memory_held()});
    }
    return moves;
  }

  /// The answer when the pod (the gang) lands on `nodes`: every candidate taken with a pod there
  /// leaves, whole; with the pod placed, each that still fits where it runs stays, each that fits
  /// elsewhere moves there instead of going
  /// (KAI's allowConsolidatingReclaim, on by default: a moved victim gives nothing back), and
  /// for reclaim the ones that go must be a valid reclaim. The ledger is left as `taken` had it.
  std::optional<Victims> settle(const Policy& policy, const VictimOrder& order, const std::vector<std::size_t>& taken,
                                const std::set<std::size_t>& nodes, LedgerJournal& journal) const {
    const std::size_t mark = journal.mark();
    const auto on_nodes = [&](const Candidate& c) {
      return std::any_of(c.pods.begin(), c.pods.end(), [&](const Allocation& a) { return nodes.count(a.node) > 0; });
    };
    for (std::size_t i : taken) {  // the rest run on where they are
      if (!on_nodes(order.candidates()[i])) {
        for (const Allocation& a : order.candidates()[i].pods) journal.restore(a);
      }
    }
    std::optional<Victims> v;
    std::vector<Placement> placed;
    if (hold_reclaimer(policy, nodes, journal, placed)) v = victims_of(policy, order, taken, nodes, on_nodes, journal);
    journal.rollback(mark);
    if (!v) return v;
    std::sort(v->pods.begin(), v->pods.end());
    v->placed = std::move(placed);
    return v;
  }

  template <typename OnNodes>
  std::optional<Victims> victims_of(const Policy& policy, const VictimOrder& order, const std::vector<std::size_t>& taken,
                                    const std::set<std::size_t>& nodes, const OnNodes& on_nodes, LedgerJournal& journal) const {
    Victims v;
    v.node = state.node(*nodes.begin()).name;
    std::vector<Release> releases;
    // KAI re-places each victim job once (common.TryToVirtuallyAllocatePreemptorAndGetVictims):
    // its next batch only, so a job whose core leaves gets its core back at most, not its extras.
    std::set<std::string> core_leaves;
    for (std::size_t i : taken) {
      const Candidate& c = order.candidates()[i];
      if (c.core && on_nodes(c)) core_leaves.insert(c.job);
    }
    // Its queue must take it back, too (KAI re-allocates a victim through the proportion plugin's
    // limits): the book as it would stand with the reclaimer placed and every victim here gone.
    std::optional<QueueBook> after;
    const auto queue_takes_back = [&](const Candidate& c) {
      if (!c.queue) return true;
      if (!after) {
        after.emplace(book);
        after->charge(reclaimer.queue, reclaimer.request, reclaimer.preemptible);
        for (std::size_t i : taken) {
          const Candidate& t = order.candidates()[i];
          if (on_nodes(t) && t.queue) after->charge(*t.queue, t.give_back, true, -1);
        }
      }
      if (!after->admits(*c.queue, c.give_back, true)) return false;
      after->charge(*c.queue, c.give_back, true);
      return true;
    };
    for (std::size_t i : taken) {
      const Candidate& c = order.candidates()[i];
      if (!on_nodes(c)) continue;
      const bool may_return = (c.core || core_leaves.count(c.job) == 0) && queue_takes_back(c);
      if (may_return && stays(c, journal)) continue;
      if (auto moves = may_return ? move_elsewhere(policy, c, journal) : std::nullopt) {
        v.moves.insert(v.moves.end(), moves->begin(), moves->end());
        continue;
      }
      for (const Allocation& a : c.pods) {
        v.pods.push_back(a.pod);
        v.gpu_memory += a.choice.memory_held();
      }
      if (reclaim) releases.push_back({*c.queue, c.give_back});
    }
    if (reclaim && !reclaimable(book, reclaimer, releases)) return std::nullopt;
    return v;
  }
};

}  // namespace

std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const VictimTarget& target,
                                    std::optional<std::size_t> queue, const Amounts& charge, const Policy& policy,
                                    const VictimShield& shield, const NodeMask* nodes, const VictimJobs* jobs,
                                    VictimPass passes, const VictimReplacing* replacing) {
  const PodRequest& pod = target.pod;
  // Over its queue's quota a non-preemptible pod stays refused whatever is evicted (every victim
  // is preemptible, and only non-preemptible pods count against that quota).
  if (queue && !pod.preemptible && !book.non_preemptible_fits(*queue, charge)) return std::nullopt;
  const Reclaimer reclaimer{queue.value_or(0), charge, pod.preemptible};
  MinRuntimes min_runtimes{book.tree(), queue, shield, {}};
  for (const bool reclaim : {true, false}) {  // KAI's cycle: reclaim, then preempt
    const VictimPass wanted = reclaim ? VictimPass::kReclaim : VictimPass::kPreempt;
    if ((static_cast<std::uint8_t>(passes) & static_cast<std::uint8_t>(wanted)) == 0) continue;
    if (reclaim && (!queue || !can_reclaim(book, reclaimer))) continue;
    Pass pass{state, book, pod, target.gang, replacing, reclaimer, reclaim, min_runtimes};
    std::vector<Candidate> found = pass.candidates(nodes, jobs);
    if (found.empty()) continue;
    if (auto victims = pass.search(policy, std::move(found), nodes)) return victims;
  }
  return std::nullopt;
}

}  // namespace fracpack::queues
