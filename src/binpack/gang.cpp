// Gangs (PodGroup minMember): all-or-nothing across nodes, InfiniBand gangs on one network leaf
// when they fit there (docs/placement.md rule 7).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fracpack/binpack/ledger.hpp"

namespace fracpack {
namespace {

/// Tries to place members [0, count) under `mask`; on any failure releases what it placed and
/// returns the failing member's index with its explanation (taken before the rollback).
struct Attempt {
  std::vector<PlaceOutcome> outcomes;
  std::optional<std::size_t> failed;
};

Attempt try_all(ClusterState& state, const Gang& gang, std::size_t count, const Policy& policy,
                const NodeMask* mask, std::size_t detailed, ExplainCache* cache) {
  Attempt a;
  for (std::size_t i = 0; i < count; ++i) {
    PlaceOutcome o = place_pod(state, gang.members[i], policy, mask, detailed, cache);
    const bool ok = o.placement.has_value();
    a.outcomes.push_back(std::move(o));
    if (!ok) {
      a.failed = i;
      for (std::size_t j = i; j-- > 0;) state.release(gang.members[j].key());
      return a;
    }
  }
  return a;
}

/// Network leaves with their nodes, tightest first (least free GPU capacity, then name), so an
/// InfiniBand gang takes the smallest leaf that holds it and leaves big leaves whole.
std::vector<NodeMask> leaves_by_free(const ClusterState& state, const std::string& label) {
  std::map<std::string, std::pair<std::int64_t, NodeMask>> leaves;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    auto it = state.node(n).labels.find(label);
    if (it == state.node(n).labels.end()) continue;
    auto& [free, mask] = leaves[it->second];
    if (mask.empty()) mask.assign(state.node_count(), false);
    mask[n] = true;
    free += state.summary(n).free_milli;
  }
  std::vector<std::pair<std::pair<std::int64_t, std::string>, NodeMask>> ordered;
  for (auto& [name, entry] : leaves) ordered.push_back({{entry.first, name}, std::move(entry.second)});
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NodeMask> out;
  for (auto& [_, mask] : ordered) out.push_back(std::move(mask));
  return out;
}

}  // namespace

std::vector<PlaceOutcome> place_gang(ClusterState& state, const Gang& gang, const Policy& policy,
                                     std::size_t detailed, ExplainCache* cache) {
  const std::size_t total = gang.members.size();
  if (gang.min_member > 0 && static_cast<std::size_t>(gang.min_member) > total) {
    // minMember is a floor, never lowered: the gang waits for its other members.
    PlaceOutcome waiting;
    waiting.why.code = Code::kUnschedulable;
    waiting.why.summary = fmt::format("gang {} needs {} pods placed together but only {} are pending; it waits for "
                                      "the rest",
                                      gang.name, gang.min_member, total);
    return std::vector<PlaceOutcome>(total, waiting);
  }
  const std::size_t core = gang.min_member <= 0 ? total : std::min<std::size_t>(total, gang.min_member);
  const bool infiniband = std::any_of(gang.members.begin(), gang.members.end(),
                                      [](const PodRequest& p) { return p.infiniband(); });
  Attempt attempt;
  bool placed = false;
  if (infiniband && !state.config().network_leaf_label.empty()) {
    for (const NodeMask& leaf : leaves_by_free(state, state.config().network_leaf_label)) {
      attempt = try_all(state, gang, core, policy, &leaf, detailed, cache);
      if (!attempt.failed) {
        placed = true;
        break;
      }
    }
  }
  if (!placed) attempt = try_all(state, gang, core, policy, nullptr, detailed, cache);

  std::vector<PlaceOutcome> out;
  if (attempt.failed) {
    const std::size_t bad = *attempt.failed;
    const PlaceOutcome& failing = attempt.outcomes[bad];
    for (std::size_t i = 0; i < total; ++i) {
      PlaceOutcome o;
      if (i == bad) {
        o = failing;
        o.why.summary =
            bad == 0 ? fmt::format("gang {} needs {} pods placed together; its first member fits nowhere: {}",
                                   gang.name, core, failing.why.summary)
                     : fmt::format("gang {} needs {} pods placed together; once its first {} are placed (tentatively, "
                                   "on GPUs the reasons below count as held), this member fits nowhere: {} Nothing "
                                   "of the gang was placed.",
                                   gang.name, core, bad, failing.why.summary);
      } else {
        o.why.code = failing.why.code;
        o.why.summary = fmt::format("gang {} needs {} pods placed together; member {} fits nowhere, so none is placed",
                                    gang.name, core, gang.members[bad].key());
      }
      out.push_back(std::move(o));
    }
    return out;
  }
  out = std::move(attempt.outcomes);
  for (std::size_t i = core; i < total; ++i) out.push_back(place_pod(state, gang.members[i], policy, nullptr, detailed, cache));
  return out;
}

}  // namespace fracpack
