// Consolidation's search (consolidation.hpp): per pod, nodes in the order of their bound, victims
// chosen on each and placed again; a gang's pods one after another on the ledger as the earlier
// ones left it. Every change to the ledger goes through a journal (ledger_journal.hpp) and is undone
// before returning.
#include "fracpack/queues/consolidation.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/queues/failed_pods.hpp"
#include "queues/consolidation_cost.hpp"
#include "queues/ledger_journal.hpp"

namespace fracpack::queues {
namespace {


/// Room for one pod on one node: the pod's GPUs there and the moves, in the order to apply them.
struct NodePlan {
  Placement placement;
  std::vector<Move> moves;
  std::vector<const PodRequest*> moved_pods;  ///< parallel to moves
  MiB moved{0};
  [[nodiscard]] detail::NodeBound cost() const { return {moves.size(), moved.count()}; }
};

class Search {
 public:
  Search(ClusterState& state, const Policy& policy, const MovablePod& movable, const MoveGate& gate,
         ConsolidationPass& pass, const ConsolidationLimits& limits)
      : state_(state), policy_(policy), movable_(movable), gate_(gate), pass_(pass), limits_(limits), journal_(state) {}

  /// Places `pods` in order, each where it fits or with moves; the plan, or nullopt.
  std::optional<ConsolidationPlan> run(const std::vector<PodRequest>& pods);

 private:
  [[nodiscard]] bool may_move(const detail::HeldPod& p) const {
    return p.movable != nullptr && (gate_.other_queues || p.allocation->queue == gate_.queue) && !frozen_.contains(p.allocation);
  }
  [[nodiscard]] bool fits(const PodRequest& pod, std::size_t node) const { return fits_now(state_, node, pod); }
  /// The policy's node for `pod` on the ledger as it is now (nullopt: none fits).
  std::optional<RankedNode> best_node(const PodRequest& pod) {
    if (pass_.verdicts() == nullptr) return select(state_, pod, policy_);
    auto chosen = pass_.verdicts()->select(state_, pod, policy_);
    return chosen.is_ok() ? *chosen : std::nullopt;
  }
  /// Reserves through the journal; the pod stays where this plan puts it.
  bool hold(const PodRequest& pod, std::size_t node, const GpuChoice& choice) {
    if (!journal_.reserve(pod, node, choice)) return false;
    frozen_.insert(state_.allocation(pod.key()));
    return true;
  }
  /// Whether `pod`, running, has no room anywhere else: then a plan that moves it fails. Asked on
  /// the ledger as the call found it (the pass remembers the answers while the ledger stays so);
  /// later members of a gang see the earlier ones placed, and are not asked.
  bool stranded(const detail::HeldPod& pod);
  std::optional<NodePlan> best_for(const PodRequest& pod, std::size_t budget);
  detail::NodeOption option_on(std::size_t n, const PodRequest& pod, const detail::MayMove& can);
  /// The key a pod's node costs are remembered under: its ask and which queues it may move.
  [[nodiscard]] std::string option_key(const PodRequest& pod) const {
    const FailedPods::Ask ask = FailedPods::ask_of(pod);
    return fmt::format("{}|{}|{}|{}|{}|{}", ask.constraints, ask.gpu, ask.cpu, ask.memory, gate_.other_queues ? "*" : gate_.queue,
                       state_.traits_epoch());
  }
  /// A pod taken off its node for a plan: where it was, and the pod.
  struct Victim {
    Allocation was;
    const PodRequest* pod;
  };
  std::optional<NodePlan> try_node(const PodRequest& pod, std::size_t node, const detail::MayMove& can, std::size_t budget);
  std::optional<std::vector<Victim>> take_until_fits(const PodRequest& pod, std::size_t node, const detail::MayMove& can,
                                                     std::size_t budget);
  void put_back_unneeded(const PodRequest& pod, std::size_t node, std::vector<Victim>& moving);
  std::optional<NodePlan> land(const PodRequest& pod, std::size_t node, std::vector<Victim> moving);
  bool apply(const PodRequest& pod, const NodePlan& plan);

  ClusterState& state_;
  const Policy& policy_;
  const MovablePod& movable_;
  const MoveGate& gate_;
  ConsolidationPass& pass_;
  ConsolidationLimits limits_;
  LedgerJournal journal_;
  std::set<const Allocation*> frozen_;  ///< what this plan placed or moved: it stays where the plan put it
};

std::optional<ConsolidationPlan> Search::run(const std::vector<PodRequest>& pods) {
  ConsolidationPlan plan;
  for (const PodRequest& pod : pods) {
    if (auto r = best_node(pod)) {
      if (!hold(pod, r->node, r->choice)) return std::nullopt;
      plan.placements.push_back({pod.key(), state_.node(r->node).name, r->choice, 0});
      continue;
    }
    auto found = best_for(pod, limits_.max_moves - plan.moves.size());
    if (!found || !apply(pod, *found)) return std::nullopt;
    plan.placements.push_back(found->placement);
    for (Move& m : found->moves) {
      plan.moved_memory += m.gpu_memory;
      plan.moves.push_back(std::move(m));
    }
  }
  if (plan.moves.empty()) return std::nullopt;
  return plan;
}

/// What node `n` would cost `pod`, worked out now.
detail::NodeOption Search::option_on(std::size_t n, const PodRequest& pod, const detail::MayMove& can) {
  detail::NodeOption o;
  o.stamp = state_.node_stamp(n);
  if (!fits_ever_on(state_, n, pod)) return o;
  const detail::NodeHeld& held = pass_.held(state_, n, movable_);
  const auto costs = detail::gpu_costs(state_, n, pod, held, can);
  o.bound = detail::node_bound(pod, held, costs);
  return o;
}

std::optional<NodePlan> Search::best_for(const PodRequest& pod, std::size_t budget) {
  if (budget == 0) return std::nullopt;
  const detail::MayMove can = [this](const detail::HeldPod& p) { return may_move(p); };
  // Nodes' costs for this ask are remembered across calls while a node is unchanged; not when
  // this plan has frozen pods already (a gang's later members).
  std::vector<detail::NodeOption> fresh;
  std::vector<detail::NodeOption>& known = frozen_.empty() ? pass_.options(option_key(pod), state_.node_count()) : fresh;
  known.resize(state_.node_count());
  struct Option {
    detail::NodeBound bound;
    std::int64_t order;
    std::size_t node;
  };
  std::vector<Option> options;
  for (std::size_t n = 0; n < state_.node_count(); ++n) {
    detail::NodeOption& o = known[n];
    if (o.stamp != state_.node_stamp(n)) o = option_on(n, pod, can);
    if (!o.bound || o.bound->moves > budget) continue;
    options.push_back({*o.bound, state_.order_label(n), n});
  }
  const auto before = [](const Option& a, const Option& b) {
    return a.bound < b.bound || (!(b.bound < a.bound) && a.order < b.order);
  };
  const std::size_t tried = std::min(options.size(), limits_.max_nodes);
  std::partial_sort(options.begin(), options.begin() + static_cast<std::ptrdiff_t>(tried), options.end(), before);
  std::optional<NodePlan> best;
  for (std::size_t i = 0; i < tried; ++i) {
    const Option& o = options[i];
    if (best && !(o.bound < best->cost())) break;  // no node from here on can do better
    auto plan = try_node(pod, o.node, can, best ? std::min(budget, best->moves.size()) : budget);
    if (plan && (!best || plan->cost() < best->cost())) best = std::move(plan);
  }
  return best;
}

/// The pod on `node` with pods moved off it: first the core, what the GPUs it needs must shed (the
/// fewest pods per GPU), then in removal order until it fits (CPU, memory); then every taken pod
/// the fit does not need goes back; the rest are placed again where the policy puts them, the
/// biggest first. When one of them finds no place after the put-back, the whole set taken is tried
/// (a pod put back may have been what made room for another). A pod with no room anywhere else
/// (stranded) stays where it is: a plan that moved it would fail, so the GPUs and the CPU it holds
/// are left out before anything is taken. nullopt when no set lands, or more than `budget` must
/// be taken.
std::optional<NodePlan> Search::try_node(const PodRequest& pod, std::size_t node, const detail::MayMove& can,
                                         std::size_t budget) {
  const std::size_t mark = journal_.mark();
  const detail::MayMove movable_here = [&](const detail::HeldPod& p) { return can(p) && !stranded(p); };
  auto taken = take_until_fits(pod, node, movable_here, budget);
  if (!taken) return std::nullopt;
  std::vector<Victim> needed = *taken;
  put_back_unneeded(pod, node, needed);
  auto plan = land(pod, node, needed);
  journal_.rollback(mark);
  if (!plan && needed.size() < taken->size()) {
    for (const Victim& v : *taken) journal_.take(v.was.pod);
    plan = land(pod, node, *taken);
    journal_.rollback(mark);
  }
  return plan;
}

/// Takes pods off `node` until `pod` fits there: the core, then in removal order. The pods taken,
/// left taken in the journal; nullopt (the journal as it was) when more than `budget` must go.
std::optional<std::vector<Search::Victim>> Search::take_until_fits(const PodRequest& pod, std::size_t node,
                                                                   const detail::MayMove& can, std::size_t budget) {
  const detail::NodeHeld& held = pass_.held(state_, node, movable_);
  const auto costs = detail::gpu_costs(state_, node, pod, held, can);
  const auto core = detail::core_victims(held, costs, detail::devices_needed(pod));
  if (costs.size() < detail::devices_needed(pod) || core.size() > budget) return std::nullopt;
  // Which pods may move is asked of the ledger as found, before anything is taken.
  std::vector<bool> in_core(held.pods.size(), false);
  for (std::size_t i : core) in_core[i] = true;
  const auto order = detail::removal_order(held, costs, can, in_core);
  std::vector<Victim> moving;
  const std::size_t mark = journal_.mark();
  // A taken pod's entry in `held` points at nothing: it is read just before it is taken.
  auto take = [&](std::size_t i) {
    moving.push_back({*held.pods[i].allocation, held.pods[i].movable});
    journal_.take(moving.back().was.pod);
  };
  for (std::size_t i : core) take(i);
  if (fits(pod, node)) return moving;
  for (auto next = order.begin(); !fits(pod, node); ++next) {
    if (next == order.end() || moving.size() == budget) {
      journal_.rollback(mark);
      return std::nullopt;
    }
    take(*next);
  }
  return moving;
}

/// Puts back, the last taken first, every pod of `moving` that `pod` can do without on `node`;
/// `moving` keeps the others (still taken).
void Search::put_back_unneeded(const PodRequest& pod, std::size_t node, std::vector<Victim>& moving) {
  for (std::size_t i = moving.size(); i-- > 0;) {
    if (!journal_.put_back(moving[i].was.pod)) continue;
    if (fits(pod, node)) {
      moving.erase(moving.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      journal_.take(moving[i].was.pod);
    }
  }
}

/// With `moving` taken: `pod` placed on `node`, then each of `moving` placed again, the biggest
/// first. The plan, or nullopt when one finds no place; the journal keeps what was reserved.
std::optional<NodePlan> Search::land(const PodRequest& pod, std::size_t node, std::vector<Victim> moving) {
  std::sort(moving.begin(), moving.end(), [](const Victim& a, const Victim& b) {
    if (a.was.choice.gpus.size() != b.was.choice.gpus.size()) return a.was.choice.gpus.size() > b.was.choice.gpus.size();
    if (a.was.choice.memory_held() != b.was.choice.memory_held()) return a.was.choice.memory_held() > b.was.choice.memory_held();
    return a.was.cpu != b.was.cpu ? a.was.cpu > b.was.cpu : a.was.pod < b.was.pod;
  });
  NodePlan plan;
  auto here = rank_nodes(state_, pod, policy_, {node});
  if (here.empty() || !journal_.reserve(pod, node, here.front().choice)) return std::nullopt;
  plan.placement = {pod.key(), state_.node(node).name, here.front().choice, 0};
  for (const Victim& v : moving) {
    auto to = best_node(*v.pod);
    if (!to || !journal_.reserve(*v.pod, to->node, to->choice)) return std::nullopt;
    plan.moves.push_back({v.was.pod, state_.node(v.was.node).name, v.was.choice.gpus, state_.node(to->node).name, to->choice,
                          v.was.choice.memory_held()});
    plan.moved_pods.push_back(v.pod);
    plan.moved += v.was.choice.memory_held();
  }
  return plan;
}

bool Search::stranded(const detail::HeldPod& pod) {
  if (journal_.mark() != 0) return false;
  if (pass_.stranded().covers(pod.ask())) return true;
  if (pass_.has_room(pod.ask())) return false;
  if (best_node(*pod.movable)) {
    pass_.add_room(pod.ask());
    return false;
  }
  pass_.stranded().add(pod.ask());
  return true;
}

/// Applies a node plan found on the ledger as it is now (the journal keeps it until the end).
bool Search::apply(const PodRequest& pod, const NodePlan& plan) {
  for (const Move& m : plan.moves) journal_.take(m.pod);
  if (!hold(pod, *state_.find_node(plan.placement.node), plan.placement.choice)) return false;
  for (std::size_t i = 0; i < plan.moves.size(); ++i) {
    const Move& m = plan.moves[i];
    if (!hold(*plan.moved_pods[i], *state_.find_node(m.to_node), m.to)) return false;
  }
  return true;
}

/// The least GPU capacity (milli-GPU) `pod` takes anywhere: whole GPUs and portions as they are,
/// a memory request on the largest GPU.
std::int64_t least_milli(const ClusterState& state, const PodRequest& pod) {
  if (const WholeGpus* w = pod.whole()) return std::int64_t{1000} * w->count;
  const GpuFraction* f = pod.fraction();
  if (f == nullptr) return 0;
  if (f->portion) return f->portion->count() * f->num_devices;
  std::int64_t largest = 0;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    for (std::size_t g = 0; g < state.node(n).gpus.size(); ++g) largest = std::max(largest, state.usable(n, g).count());
  }
  return largest == 0 ? 0 : f->memory->count() * 1000 / largest * f->num_devices;
}

/// Moving pods only moves what they hold: the cluster's free GPU capacity, CPU and memory must
/// cover the pods, or no plan can place them (O(nodes)).
bool room_in_cluster(const ClusterState& state, const std::vector<PodRequest>& pods) {
  std::int64_t gpu = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  for (const PodRequest& pod : pods) {
    gpu += least_milli(state, pod);
    cpu += pod.cpu.count();
    memory += pod.memory.count();
  }
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    const NodeSummary& s = state.summary(n);
    gpu -= s.free_milli;
    cpu -= s.free_cpu;
    memory -= s.free_memory;
  }
  return gpu <= 0 && cpu <= 0 && memory <= 0;
}

}  // namespace

ConsolidationPass::ConsolidationPass(VerdictCache* verdicts) : verdicts_(verdicts) {}

ConsolidationPass::~ConsolidationPass() = default;

void ConsolidationPass::begin(const ClusterState& state) {
  if (version_ == state.version()) return;
  stranded_ = FailedPods{};  // changed since the last call: ask again
  room_.clear();
}

bool ConsolidationPass::has_room(const FailedPods::Ask& ask) const {
  auto it = room_.find(ask.constraints);
  return it != room_.end() && std::any_of(it->second.begin(), it->second.end(), [&](const auto& r) { return r.at_least(ask); });
}

void ConsolidationPass::add_room(const FailedPods::Ask& ask) {
  if (has_room(ask)) return;
  auto& list = room_[ask.constraints];
  std::erase_if(list, [&](const auto& r) { return ask.at_least(r); });
  list.push_back(ask);
}

void ConsolidationPass::end(const ClusterState& state) { version_ = state.version(); }

std::vector<detail::NodeOption>& ConsolidationPass::options(const std::string& ask, std::size_t nodes) {
  if (options_.size() > 4096 && !options_.contains(ask)) options_.clear();  // many one-off asks: start again
  auto& list = options_[ask];
  if (list.size() != nodes) list.assign(nodes, {});
  return list;
}

const detail::NodeHeld& ConsolidationPass::held(const ClusterState& state, std::size_t n, const MovablePod& movable) {
  if (nodes_.size() < state.node_count()) nodes_.resize(state.node_count());
  if (!nodes_[n]) nodes_[n] = std::make_unique<detail::NodeHeld>();
  detail::NodeHeld& held = *nodes_[n];
  if (held.stamp != state.node_stamp(n)) detail::read_node(state, n, movable, held);
  return held;
}

std::optional<ConsolidationPlan> find_consolidation(ClusterState& state, const std::vector<PodRequest>& pods,
                                                    const Policy& policy, const MovablePod& movable, const MoveGate& gate,
                                                    ConsolidationPass& pass, const ConsolidationLimits& limits) {
  if (pods.empty() || !room_in_cluster(state, pods)) return std::nullopt;
  pass.begin(state);
  std::optional<ConsolidationPlan> plan;
  {
    Search search(state, policy, movable, gate, pass, limits);
    plan = search.run(pods);
  }  // the search's journal has put the ledger back
  pass.end(state);
  return plan;
}

}  // namespace fracpack::queues
