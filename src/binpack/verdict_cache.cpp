#include "fracpack/binpack/verdict_cache.hpp"

#include <algorithm>
#include <cassert>
#include <string_view>
#include <tuple>
#include <vector>

#include "binpack/fit.hpp"
#include "binpack/gpu_choice.hpp"

namespace fracpack {
namespace {

/// The GPUs `pod` takes on `chosen`'s node, worked out now (select()'s answer scores 10).
/// kInternal when the node yields no choice although the cache ranked it: the cache and the state
/// disagree, a bug, never a "does not fit".
Status choose_on(const ClusterState& state, const PodRequest& pod, const Policy& policy, const PodTraits& traits,
                 RankedNode& chosen) {
  auto evaluated = binpack::evaluate_node(state, chosen.node, pod, traits, policy);
  if (!evaluated) {
    return Status(Code::kInternal, fmt::format("{}: the cached key of node {} has no GPU choice (the cache and the "
                                               "state disagree)", pod.key(), state.node(chosen.node).name));
  }
  chosen.choice = std::move(evaluated->choice);
  chosen.score = 10.0;
  return Status::ok();
}

}  // namespace

VerdictCache::Shape& VerdictCache::shape_for(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                             const std::string* known) {
  std::string worked_out;
  const std::string& key = known != nullptr ? *known : worked_out.assign(pod_shape(pod));
  assert(known == nullptr || *known == pod_shape(pod));  // another shape's key would mix their entries
  auto it = shapes_.find(key);
  if (it != shapes_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
  } else {
    lru_.push_front(key);
    it = shapes_.emplace(key, std::pair{Shape{}, lru_.begin()}).first;
  }
  Shape& shape = it->second.first;
  if (shape.policy != &policy || shape.traits_epoch != state.traits_epoch()) {  // every verdict may differ
    shape.policy = &policy;
    shape.traits_epoch = state.traits_epoch();
    shape.entries.assign(state.node_count(), Entry{});
    shape.ranked.reset();
  }
  // Nodes added or removed: the entries of the others stay (a node moved into a freed position
  // has a new stamp, so its entry there is recomputed).
  if (shape.entries.size() != state.node_count()) shape.entries.resize(state.node_count());
  account(key, shape);
  return shape;
}

VerdictCache::Ranked& VerdictCache::ranked_for(Shape& shape, const ClusterState& state, const PodRequest& pod,
                                               const Policy& policy, std::optional<PodTraits>& traits) {
  if (!shape.ranked || shape.ranked->ranking.size() != state.node_count()) {
    if (!shape.ranked) shape.ranked = std::make_unique<Ranked>();
    shape.ranked->ranking.reset(state.node_count());
    shape.ranked->choices.assign(state.node_count(), Ranked::Choice{});
    account(lru_.front(), shape);  // shape_for() made it the most recent
  }
  Ranked& ranked = *shape.ranked;
  ranked.ranking.sync(state.node_stamps(), [&](std::size_t n) {
    // Most changed nodes cannot take the pod: their summary says so before the entry is read.
    if (!binpack::could_fit(pod, *traits, state.summary(n))) {
      ranked.ranking.clear(n);
      return;
    }
    Entry& e = shape.entries[n];
    if (e.stamp != state.node_stamp(n)) {
      Ranked::Choice& kept = ranked.choices[n];
      refresh(e, state, n, pod, policy, traits, &kept.choice);
      kept.stamp = e.key ? e.stamp : 0;
    }
    if (!e.key) {
      ranked.ranking.clear(n);
      return;
    }
    NodeKey key = *e.key;
    if (policy.ties() == Policy::Ties::kNodeOrder) binpack::break_tie(policy, pod, state.node(n), key);  // the node's own draw
    ranked.ranking.set(n, key);
  });
  return ranked;
}

std::pair<std::size_t, NodeKey> VerdictCache::draw_among_ties(const Ranked& ranked, const ClusterState& state,
                                                              const PodRequest& pod, const Policy& policy) {
  std::pair<std::size_t, NodeKey> chosen{*ranked.ranking.best(), {}};
  bool first = true;
  ranked.ranking.ties([&](std::size_t n, const NodeKey& key) {
    NodeKey drawn = key;
    binpack::break_tie(policy, pod, state.node(n), drawn);
    if (first || drawn < chosen.second) chosen = {n, drawn};
    first = false;
  });
  return chosen;
}

void VerdictCache::account(const std::string& key, Shape& shape) {
  std::size_t cost = 2 * key.size() + shape.entries.capacity() * sizeof(Entry) + sizeof(Shape);  // key: map and list
  if (shape.ranked) cost += shape.ranked->ranking.bytes() + shape.ranked->choices.capacity() * sizeof(Ranked::Choice);
  bytes_ += cost - shape.cost;
  shape.cost = cost;
  while (lru_.size() > 1 && (shapes_.size() > capacity_ || bytes_ > max_bytes_)) {
    auto oldest = shapes_.find(lru_.back());
    bytes_ -= oldest->second.first.cost;
    shapes_.erase(oldest);
    lru_.pop_back();
  }
}

void VerdictCache::refresh(Entry& e, const ClusterState& state, std::size_t n, const PodRequest& pod, const Policy& policy,
                           std::optional<PodTraits>& traits, GpuChoice* choice) {
  if (!traits) traits = binpack::traits_of(pod, state);
  ++evaluations_;
  e.stamp = state.node_stamp(n);
  const Verdict verdict = binpack::check_node(state, n, pod, *traits, binpack::Detail::kCategory);
  e.code = verdict.code;
  std::string categories;
  // Once per category, in the verdict's order. A verdict has a few reasons (check_resources names
  // at most 8 short resources): a linear look, no allocation per category.
  std::vector<std::string_view> seen;
  for (const auto& r : verdict.reasons) {
    if (std::find(seen.begin(), seen.end(), r.category) != seen.end()) continue;
    seen.push_back(r.category);
    if (!categories.empty()) categories += "; ";
    categories += r.category;
  }
  if (!e.categories || *e.categories != categories) {  // most refreshes keep the verdict they had
    if (categories_.size() > 4096) categories_.clear();  // not expected: categories are a fixed set
    auto& shared = categories_[categories];
    if (!shared) shared = std::make_shared<const std::string>(categories);
    e.categories = shared;
  }
  e.key.reset();
  if (e.fits()) {
    if (auto evaluated = binpack::evaluate_node(state, n, pod, *traits, policy)) {
      e.key = evaluated->key;
      if (choice != nullptr) *choice = std::move(evaluated->choice);
    }
  }
}

Result<std::optional<RankedNode>> VerdictCache::select(const ClusterState& state, const PodRequest& pod,
                                                        const Policy& policy, const std::vector<std::size_t>& nodes) {
  std::optional<PodTraits> traits;
  return select_among(state, pod, policy, nodes, traits);
}

Result<std::optional<RankedNode>> VerdictCache::select_among(const ClusterState& state, const PodRequest& pod,
                                                              const Policy& policy, const std::vector<std::size_t>& nodes,
                                                              std::optional<PodTraits>& traits) {
  // The nodes of the best (tier, value) so far; value2 is the tie-break among them.
  auto rank = [](const NodeKey& k) { return std::pair{k.tier, k.value}; };
  std::vector<std::pair<std::size_t, NodeKey>> best;
  visit_with(state, pod, policy, nodes, traits, [&](std::size_t n, const Entry& e) {
    if (!e.key) return;
    if (!best.empty() && rank(*e.key) > rank(best.front().second)) return;
    if (!best.empty() && rank(*e.key) < rank(best.front().second)) best.clear();
    best.emplace_back(n, *e.key);
  });
  if (best.empty()) return std::optional<RankedNode>{};
  std::optional<RankedNode> chosen;
  for (auto& [n, key] : best) {
    binpack::break_tie(policy, pod, state.node(n), key);
    if (!chosen || key < chosen->key) {
      chosen.emplace();
      chosen->node = n;
      chosen->key = key;
    }
  }
  if (!traits) traits = binpack::traits_of(pod, state);
  if (Status st = choose_on(state, pod, policy, *traits, *chosen); !st.is_ok()) return st;
  return chosen;
}

Result<std::optional<RankedNode>> VerdictCache::select(const ClusterState& state, const PodRequest& pod,
                                                        const Policy& policy, const std::string* shape) {
  std::optional<PodTraits> traits = binpack::traits_of(pod, state);
  std::lock_guard lock(mu_);
  Ranked& ranked = ranked_for(shape_for(state, pod, policy, shape), state, pod, policy, traits);
  const std::optional<std::size_t> best = ranked.ranking.best();
  if (!best) return std::optional<RankedNode>{};
  RankedNode chosen;
  if (policy.ties() == Policy::Ties::kPerPod) {
    std::tie(chosen.node, chosen.key) = draw_among_ties(ranked, state, pod, policy);
  } else {
    chosen.node = *best;
    chosen.key = ranked.ranking.key(*best);
  }
  if (Ranked::Choice& kept = ranked.choices[chosen.node]; kept.stamp == state.node_stamp(chosen.node)) {
    chosen.choice = std::move(kept.choice);  // handed over: a bind changes the node anyway
    chosen.score = 10.0;
    kept.stamp = 0;
  } else if (Status st = choose_on(state, pod, policy, *traits, chosen); !st.is_ok()) {
    return st;
  }
  return std::optional<RankedNode>(std::move(chosen));
}

std::vector<RankedNode> VerdictCache::rank(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                           const std::vector<std::size_t>& nodes) {
  std::vector<RankedNode> out;
  out.reserve(nodes.size());
  visit(state, pod, policy, nodes, [&](std::size_t n, const Entry& e) {
    if (!e.key) return;
    RankedNode r;
    r.node = n;
    r.key = *e.key;
    binpack::break_tie(policy, pod, state.node(n), r.key);  // the cache holds keys of the shape, not the pod
    out.push_back(std::move(r));
  });
  std::sort(out.begin(), out.end(), [](const RankedNode& a, const RankedNode& b) { return a.key < b.key; });
  normalise_scores(out);
  return out;
}

}  // namespace fracpack
