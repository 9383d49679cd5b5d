#include "fracpack/binpack/scheduler.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "binpack/fit.hpp"
#include "binpack/gpu_choice.hpp"

namespace fracpack {
namespace {

/// The exact key of node `n`, or nullopt when the pod does not fit it.
std::optional<RankedNode> evaluate(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                   const PodTraits& traits, const Policy& policy) {
  if (!binpack::check_node(state, n, pod, traits, binpack::Detail::kNone).fits()) return std::nullopt;
  auto e = binpack::evaluate_node(state, n, pod, traits, policy);
  if (!e) return std::nullopt;
  RankedNode r;
  r.node = n;
  r.key = e->key;
  binpack::break_tie(policy, pod, state.node(n), r.key);
  r.choice = std::move(e->choice);
  return r;
}

std::vector<std::size_t> all_or(const ClusterState& state, const std::vector<std::size_t>& nodes) {
  if (!nodes.empty()) return nodes;
  std::vector<std::size_t> all(state.node_count());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

}  // namespace

std::optional<RankedNode> select(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                 const NodeMask* mask) {
  const PodTraits traits = binpack::traits_of(pod, state);
  std::optional<RankedNode> best;
  auto bound = [&](const SummaryRange& range) -> std::optional<NodeKey> {
    if (!binpack::could_fit(pod, traits, range.hi)) return std::nullopt;
    return policy.key_lower_bound(traits, range);
  };
  auto exact = [&](std::size_t n) -> std::optional<NodeKey> {
    if (mask != nullptr && !(*mask)[n]) return std::nullopt;
    auto r = evaluate(state, n, pod, traits, policy);
    if (!r) return std::nullopt;
    const NodeKey key = r->key;
    if (!best || key < best->key) best = std::move(r);
    return key;
  };
  auto found = state.index().search(bound, exact);
  if (!found) return std::nullopt;
  // `best` tracks the evaluated minimum, which is what search() returned.
  best->score = 10.0;
  return best;
}

std::vector<RankedNode> rank_nodes(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                   const std::vector<std::size_t>& nodes) {
  const PodTraits traits = binpack::traits_of(pod, state);
  std::vector<RankedNode> out;
  for (std::size_t n : all_or(state, nodes)) {
    if (auto r = evaluate(state, n, pod, traits, policy)) out.push_back(std::move(*r));
  }
  std::sort(out.begin(), out.end(), [](const RankedNode& a, const RankedNode& b) { return a.key < b.key; });
  normalise_scores(out);
  return out;
}

std::string pod_shape(const PodRequest& pod) {
  std::string key = fmt::format("{}|{}|", pod.cpu.count(), pod.memory.count());
  if (const auto* w = pod.whole()) key += fmt::format("w{}:{}", w->count, w->shared_slot);
  if (const auto* f = pod.fraction()) {
    key += fmt::format("f{}:{}:{}:{}:{}", f->memory ? f->memory->count() : -1, f->portion ? f->portion->count() : -1,
                       f->memory_limit ? f->memory_limit->count() : -1, f->num_devices, static_cast<int>(f->mode));
  }
  for (const auto* m : {&pod.rdma, &pod.extended}) {
    for (const auto& [name, amount] : *m) key += fmt::format("|{}={}", name, amount);
  }
  for (const auto& [k, v] : pod.node_selector) key += fmt::format("|{}:{}", k, v);
  if (!pod.node_affinity.empty()) key += "|affinity:" + describe(pod.node_affinity);
  return key;
}

Explanation ExplainCache::explain(const ClusterState& state, const PodRequest& pod, std::size_t detailed) {
  if (state.version() != version_) {
    answers_.clear();
    version_ = state.version();
  }
  const std::string key = fmt::format("{}#{}", pod_shape(pod), detailed);
  auto it = answers_.find(key);
  if (it == answers_.end()) it = answers_.emplace(key, fracpack::explain(state, pod, nullptr, detailed)).first;
  return it->second;
}

std::optional<MiB> smallest_candidate_gpu(const ClusterState& state, const PodRequest& pod) {
  const PodTraits traits = binpack::traits_of(pod, state);
  const GpuFraction* f = pod.fraction();
  std::optional<MiB> best;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    if (!binpack::fits_ever(state, n, pod, traits)) continue;
    for (std::size_t g = 0; g < state.node(n).gpus.size(); ++g) {
      const MiB memory = state.node(n).gpus[g].memory;
      if (f != nullptr && (binpack::fraction_need(*f, state, n, g) > state.usable(n, g) ||
                           (f->memory_limit && *f->memory_limit > memory))) {
        continue;
      }
      if (!best || memory < *best) best = memory;
    }
  }
  return best;
}

bool fits_now(const ClusterState& state, std::size_t n, const PodRequest& pod) {
  return binpack::check_node(state, n, pod, binpack::traits_of(pod, state), binpack::Detail::kNone).fits();
}

bool fits_ever_on(const ClusterState& state, std::size_t n, const PodRequest& pod) {
  return binpack::fits_ever(state, n, pod, binpack::traits_of(pod, state));
}

NodeMask nodes_that_could_fit(const ClusterState& state, const PodRequest& pod) {
  const PodTraits traits = binpack::traits_of(pod, state);
  NodeMask out(state.node_count(), false);
  for (std::size_t n = 0; n < state.node_count(); ++n) out[n] = binpack::fits_ever(state, n, pod, traits);
  return out;
}

void normalise_scores(std::vector<RankedNode>& ranked) {
  if (ranked.empty()) return;
  std::vector<std::int64_t> tiers;
  for (const auto& r : ranked) {
    if (tiers.empty() || tiers.back() != r.key.tier) tiers.push_back(r.key.tier);
  }
  const double band = 10.0 / static_cast<double>(tiers.size());
  std::size_t begin = 0;
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    std::size_t end = begin;
    while (end < ranked.size() && ranked[end].key.tier == tiers[t]) ++end;
    const double top = 10.0 - band * static_cast<double>(t);
    const auto best = static_cast<double>(ranked[begin].key.value);
    const auto worst = static_cast<double>(ranked[end - 1].key.value);
    for (std::size_t i = begin; i < end; ++i) {
      const double v = static_cast<double>(ranked[i].key.value);
      ranked[i].score = worst == best ? top : top - band * (v - best) / (worst - best);
    }
    begin = end;
  }
}

std::vector<std::pair<std::size_t, Verdict>> filter_nodes(const ClusterState& state, const PodRequest& pod,
                                                          const std::vector<std::size_t>& nodes) {
  const PodTraits traits = binpack::traits_of(pod, state);
  std::vector<std::pair<std::size_t, Verdict>> out;
  for (std::size_t n : all_or(state, nodes)) {
    out.emplace_back(n, binpack::check_node(state, n, pod, traits, binpack::Detail::kFull));
  }
  return out;
}

Explanation explain(const ClusterState& state, const PodRequest& pod, const NodeMask* mask, std::size_t detailed) {
  Explanation e;
  e.code = Code::kUnschedulableAndUnresolvable;
  const PodTraits traits = binpack::traits_of(pod, state);
  std::map<std::string, std::size_t> counts;
  std::size_t considered = 0;
  for (std::size_t n : state.nodes_in_name_order()) {  // the detailed nodes are the first by name
    if (mask != nullptr && !(*mask)[n]) continue;
    ++considered;
    const bool full = e.nodes.size() < detailed;
    Verdict verdict = binpack::check_node(state, n, pod, traits, full ? binpack::Detail::kFull : binpack::Detail::kCategory);
    if (verdict.fits()) {
      // A node that fits but was not chosen: only possible when the decision was limited to a
      // mask (a gang on one network leaf); without one it would mean the index missed a node.
      verdict.code = Code::kUnschedulable;
      verdict.reasons.push_back({mask != nullptr ? "node(s) were outside the nodes considered"
                                                 : "node(s) fit but the index did not offer them (a fracpack bug: please report it)",
                                 ""});
    }
    if (verdict.code == Code::kUnschedulable) e.code = Code::kUnschedulable;
    for (const auto& reason : verdict.reasons) ++counts[reason.category];
    if (full) {
      e.nodes.emplace_back(state.node(n).name, std::move(verdict));
    } else {
      ++e.nodes_omitted;
    }
  }
  std::vector<std::pair<std::size_t, std::string>> parts;
  for (const auto& [category, count] : counts) parts.emplace_back(count, category);
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> words;
  for (const auto& [count, category] : parts) words.push_back(fmt::format("{} {}", count, category));
  e.summary = considered == 0 ? "0/0 nodes are available: the cluster has no nodes"
                              : fmt::format("0/{} nodes are available: {}.", considered, fmt::join(words, ", "));
  return e;
}

}  // namespace fracpack
