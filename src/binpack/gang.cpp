// Gangs (docs/placement.md rules 7, 18, 19): a PodGroup's tree of parts placed all-or-nothing,
// each part inside the topology domain its constraint asks for.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fracpack/binpack/gang.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/core/quoting.hpp"

namespace fracpack {
namespace {

using Candidate = std::optional<NodeMask>;  // nullopt: every node

/// Nodes of `base` (every node when null) carrying `label`, one mask per value, tightest first
/// (least free GPU capacity, then value): a part takes the smallest domain that holds it and
/// leaves big ones whole.
std::vector<NodeMask> domains(const ClusterState& state, const NodeMask* base, const std::string& label) {
  std::map<std::string, std::pair<std::int64_t, NodeMask>> by_value;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    if (base != nullptr && !(*base)[n]) continue;
    auto it = state.node(n).labels.find(label);
    if (it == state.node(n).labels.end()) continue;
    auto& [free, mask] = by_value[it->second];
    if (mask.empty()) mask.assign(state.node_count(), false);
    mask[n] = true;
    free += state.summary(n).free_milli;
  }
  std::vector<std::pair<std::pair<std::int64_t, std::string>, NodeMask>> ordered;
  for (auto& [value, entry] : by_value) ordered.push_back({{entry.first, value}, std::move(entry.second)});
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NodeMask> out;
  for (auto& [_, mask] : ordered) out.push_back(std::move(mask));
  return out;
}

/// A pod's sub-group: its label, or KAI's DefaultSubGroup ("default") when it has none.
std::string sub_group_of(const std::string& label) { return label.empty() ? std::string("default") : label; }

/// Nodes of `base` (every node when null) whose `label` is `value`.
NodeMask restrict_to(const ClusterState& state, const NodeMask* base, const std::string& label, const std::string& value) {
  NodeMask mask(state.node_count(), false);
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    if (base != nullptr && !(*base)[n]) continue;
    auto it = state.node(n).labels.find(label);
    mask[n] = it != state.node(n).labels.end() && it->second == value;
  }
  return mask;
}

}  // namespace

struct GangPlacer::Impl {
  /// A part of the gang: the PodGroup (index 0) or one of its sub-groups.
  struct Part {
    std::string name;  ///< "" for the PodGroup
    int parent = -1;
    std::vector<int> children;
    int min_member = 0;     ///< a leaf's pods together
    int need_children = 0;  ///< with children: how many must be satisfied
    TopologyConstraint topology;
    std::vector<std::size_t> members;       ///< a leaf's pending members, arrival order
    std::vector<std::size_t> running_nodes; ///< a leaf's members already on nodes
    [[nodiscard]] bool leaf() const { return children.empty(); }
  };
  struct Failure {
    std::optional<std::size_t> member;  ///< the member that fit nowhere (none: no domain at all)
    Explanation why;
    std::size_t placed_before = 0;
    int part = 0;
  };

  ClusterState* state;    ///< null: counting only
  const Gang& gang;
  const Policy* policy;   ///< null: counting only
  std::size_t detailed;
  ExplainCache* cache;
  std::vector<Part> parts;
  std::vector<int> part_of;              ///< member → its leaf part; -1: refused (no such sub-group)
  std::vector<PlaceOutcome> outcomes;
  std::vector<char> placed;
  std::vector<char> done;                ///< placed, or refused for good
  std::vector<std::size_t> node_of;      ///< a placed member's node index
  std::vector<std::size_t> stack;        ///< placed members, in order
  std::optional<Failure> failure;

  Impl(ClusterState* s, const Gang& g, const Policy* p, std::size_t d, ExplainCache* c)
      : state(s), gang(g), policy(p), detailed(d), cache(c), part_of(g.members.size(), 0), outcomes(g.members.size()),
        placed(g.members.size(), 0), done(g.members.size(), 0), node_of(g.members.size(), 0) {
    build();
  }

  // ---- The tree ------------------------------------------------------------------------------
  void build() {
    const GangRule* rule = gang.rule;
    parts.push_back(Part{});
    if (rule != nullptr) parts[0].topology = rule->topology;
    if (rule == nullptr || rule->sub_groups.empty()) {
      const int min = rule != nullptr ? rule->min_member : gang.min_member;
      parts[0].min_member = min > 0 ? min : static_cast<int>(gang.members.size() + gang.running.size());
      for (std::size_t i = 0; i < gang.members.size(); ++i) parts[0].members.push_back(i);
      for (const auto& r : gang.running) parts[0].running_nodes.push_back(r.node);
    } else {
      build_sub_groups(*rule);
    }
    const bool infiniband = std::any_of(gang.members.begin(), gang.members.end(), [](const PodRequest& p) { return p.infiniband(); });
    if (infiniband && state != nullptr && parts[0].topology.empty()) parts[0].topology.preferred_level = state->config().network_leaf_label;
  }

  void build_sub_groups(const GangRule& rule) {
    std::map<std::string, int> by_name;
    for (const SubGroupSpec& s : rule.sub_groups) {
      by_name[s.name] = static_cast<int>(parts.size());
      Part p;
      p.name = s.name;
      p.min_member = std::max(s.min_member, 1);  // KAI: a PodSet needs at least one pod
      p.topology = s.topology;
      parts.push_back(std::move(p));
    }
    for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {  // check_gang_rule: every parent exists, no cycle
      const int self = static_cast<int>(i) + 1;
      const auto parent = by_name.find(rule.sub_groups[i].parent);
      parts[self].parent = parent == by_name.end() ? 0 : parent->second;
      parts[parts[self].parent].children.push_back(self);
    }
    parts[0].need_children = rule.min_sub_group.value_or(static_cast<int>(parts[0].children.size()));
    for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {
      Part& p = parts[i + 1];
      p.need_children = rule.sub_groups[i].min_sub_group.value_or(static_cast<int>(p.children.size()));
    }
    for (std::size_t i = 0; i < gang.members.size(); ++i) {
      auto it = by_name.find(sub_group_of(gang.members[i].sub_group));
      part_of[i] = it != by_name.end() && parts[it->second].leaf() ? it->second : -1;
      if (part_of[i] >= 0) {
        parts[part_of[i]].members.push_back(i);
      } else {
        refuse_orphan(i, rule);
      }
    }
    for (const auto& r : gang.running) {
      auto it = by_name.find(sub_group_of(r.sub_group));
      if (it != by_name.end() && parts[it->second].leaf()) parts[it->second].running_nodes.push_back(r.node);
    }
  }

  void refuse_orphan(std::size_t i, const GangRule& rule) {
    std::vector<std::string> leaves;
    for (std::size_t p = 1; p < parts.size(); ++p) {
      if (std::none_of(rule.sub_groups.begin(), rule.sub_groups.end(), [&](const SubGroupSpec& s) { return s.parent == parts[p].name; })) {
        leaves.push_back(parts[p].name);
      }
    }
    PlaceOutcome& o = outcomes[i];
    o.why.code = Code::kUnschedulableAndUnresolvable;
    const std::string& label = gang.members[i].sub_group;
    o.why.summary = fmt::format("pod {}: {} names no leaf sub-group of PodGroup {} (its leaves: {}); KAI leaves such a pod out of "
                                "its gang, unscheduled",
                                gang.members[i].key(),
                                label.empty() ? std::string("it has no label kai.scheduler/subgroup-name, so its sub-group is \"default\", which")
                                              : fmt::format("its label kai.scheduler/subgroup-name = \"{}\"", excerpt(label)),
                                gang.name, fmt::join(leaves, ", "));
    done[i] = 1;
  }

  // ---- Counting ------------------------------------------------------------------------------
  [[nodiscard]] int placed_in(const Part& p) const {
    return static_cast<int>(std::count_if(p.members.begin(), p.members.end(), [&](std::size_t i) { return placed[i] != 0; }));
  }
  [[nodiscard]] int need_of(int p) const {
    const Part& part = parts[p];
    return std::max(0, part.min_member - static_cast<int>(part.running_nodes.size()) - placed_in(part));
  }
  [[nodiscard]] bool satisfied(int p) const {
    const auto [has, needs] = standing(p);
    return has >= needs;
  }
  /// KAI's minAvailableState over the leaves (GangProgress).
  [[nodiscard]] GangProgress progress() const {
    bool exact = true;
    for (int p = 0; p < static_cast<int>(parts.size()); ++p) {
      if (!parts[p].leaf()) continue;
      const auto [on_nodes, min_member] = standing(p);
      if (on_nodes < min_member) return GangProgress::kBelowMinimum;
      if (on_nodes > min_member) exact = false;
    }
    return exact ? GangProgress::kAtMinimum : GangProgress::kAboveMinimum;
  }
  /// What a part has toward its minimum and what the minimum is (KAI's GetNumActiveAllocatedMembers
  /// and GetMinMembersToSatisfy): a leaf's pods on nodes, a set's satisfied children.
  [[nodiscard]] std::pair<int, int> standing(int p) const {
    const Part& part = parts[p];
    if (part.leaf()) return {static_cast<int>(part.running_nodes.size()) + placed_in(part), part.min_member};
    const auto ok = std::count_if(part.children.begin(), part.children.end(), [&](int c) { return satisfied(c); });
    return {static_cast<int>(ok), part.need_children};
  }
  /// KAI's subgrouporder plugin (orderByAllocationRatio): a part below its minimum first; a part
  /// that needs nothing last (the fewer on nodes first); else the lower ratio of what it has to
  /// its minimum.
  [[nodiscard]] bool part_before(int a, int b) const {
    const auto [ca, ta] = standing(a);
    const auto [cb, tb] = standing(b);
    const bool a_short = ca < ta;
    const bool b_short = cb < tb;
    if (a_short || b_short) return a_short && !b_short;
    if ((ta == 0) != (tb == 0)) return tb == 0;
    if (ta == 0) return ca < cb;
    return static_cast<std::int64_t>(ca) * tb < static_cast<std::int64_t>(cb) * ta;
  }
  /// The member KAI's elastic phase takes next under part `p` (podgroup_info.GetTasksToAllocate):
  /// in an unsatisfied part, its first waiting member (its minimum goes whole); in a satisfied
  /// one, the children in KAI's order (sets before leaves, then part_before), the first that has
  /// a member waiting.
  [[nodiscard]] std::optional<std::size_t> next_under(int p) const {
    const Part& part = parts[p];
    if (part.leaf() || !satisfied(p)) {
      std::optional<std::size_t> first;
      for_leaves(p, [&](int leaf) {
        for (std::size_t i : waiting_in(leaf)) {
          if (!first || i < *first) first = i;
        }
      });
      return first;
    }
    std::vector<int> children;
    for (int c : part.children) if (!parts[c].leaf()) children.push_back(c);
    for (int c : part.children) if (parts[c].leaf()) children.push_back(c);
    std::stable_sort(children.begin(), children.end(), [&](int a, int b) { return part_before(a, b); });
    for (int c : children) {
      if (auto i = next_under(c)) return i;
    }
    return std::nullopt;
  }
  template <typename F>
  void for_leaves(int p, F&& f) const {
    if (parts[p].leaf()) {
      f(p);
      return;
    }
    for (int c : parts[p].children) for_leaves(c, f);
  }
  /// The waiting members a leaf's minimum would take, in arrival order.
  [[nodiscard]] std::vector<std::size_t> waiting_in(int p) const {
    std::vector<std::size_t> out;
    for (std::size_t i : parts[p].members) {
      if (!placed[i] && !done[i]) out.push_back(i);
    }
    return out;
  }
  /// Whether `p` can be satisfied by count; appends the members it would take.
  bool by_count(int p, std::vector<std::size_t>& take, std::string* why) const {
    const Part& part = parts[p];
    if (part.leaf()) {
      const int need = need_of(p);
      std::vector<std::size_t> waiting = waiting_in(p);
      if (static_cast<int>(waiting.size()) < need) {
        const std::size_t on_nodes = part.running_nodes.size() + static_cast<std::size_t>(placed_in(part));
        if (why != nullptr && part.name.empty()) {
          *why = fmt::format(" needs {} pods placed together but only {} are pending{}", need, waiting.size(),
                             on_nodes == 0 ? "" : fmt::format(" ({} of its minimum {} are on nodes)", on_nodes, part.min_member));
        } else if (why != nullptr) {
          *why = fmt::format(": sub-group {} has {} of the {} members it still needs pending (minMember {}, {} on nodes)", part.name,
                             waiting.size(), need, part.min_member, on_nodes);
        }
        return false;
      }
      take.insert(take.end(), waiting.begin(), waiting.begin() + need);
      return true;
    }
    const std::size_t mark = take.size();
    int ok = 0;
    for (int c : part.children) {
      if (ok >= part.need_children) break;
      if (by_count(c, take, why)) ++ok;
    }
    if (ok >= part.need_children) return true;
    take.resize(mark);
    if (why != nullptr) {
      *why = fmt::format("{}; {} needs {} of its {} child sub-group(s) satisfied", *why,
                         part.name.empty() ? "the PodGroup" : "sub-group " + part.name, part.need_children, part.children.size());
    }
    return false;
  }

  // ---- Topology ------------------------------------------------------------------------------
  void subtree_nodes(int p, std::vector<std::size_t>& out) const {
    const Part& part = parts[p];
    out.insert(out.end(), part.running_nodes.begin(), part.running_nodes.end());
    for (std::size_t i : part.members) {
      if (placed[i]) out.push_back(node_of[i]);
    }
    for (int c : part.children) subtree_nodes(c, out);
  }
  /// The value of `label` the part's members already on nodes chose: nullopt when none is on a
  /// node; "" inside when one is on a node without the label.
  [[nodiscard]] std::optional<std::string> anchor(int p, const std::string& label) const {
    std::vector<std::size_t> nodes;
    subtree_nodes(p, nodes);
    if (nodes.empty()) return std::nullopt;
    const auto& labels = state->node(nodes.front()).labels;
    auto it = labels.find(label);
    return it == labels.end() ? std::string() : it->second;
  }
  /// Where part `p` may go inside `base`, in the order to try.
  [[nodiscard]] std::vector<Candidate> candidates(int p, const Candidate& base) const {
    const TopologyConstraint& t = parts[p].topology;
    const NodeMask* b = base ? &*base : nullptr;
    std::vector<Candidate> required;
    if (t.required_level.empty()) {
      required.push_back(base);
    } else if (auto value = anchor(p, t.required_level)) {
      if (value->empty()) return {};
      required.emplace_back(restrict_to(*state, b, t.required_level, *value));
    } else {
      for (auto& d : domains(*state, b, t.required_level)) required.emplace_back(std::move(d));
    }
    if (t.preferred_level.empty()) return required;
    std::vector<Candidate> out;
    const auto preferred = anchor(p, t.preferred_level);
    for (const Candidate& r : required) {
      const NodeMask* within = r ? &*r : nullptr;
      if (preferred) {
        if (!preferred->empty()) out.emplace_back(restrict_to(*state, within, t.preferred_level, *preferred));
      } else {
        for (auto& d : domains(*state, within, t.preferred_level)) out.emplace_back(std::move(d));
      }
    }
    out.insert(out.end(), required.begin(), required.end());
    return out;
  }
  /// The domain the placed parts above `p` chose (their required levels), for a step below them.
  [[nodiscard]] Candidate above(int p) const {
    Candidate mask;
    for (int a = parts[p].parent; a >= 0; a = parts[a].parent) {
      const std::string& level = parts[a].topology.required_level;
      if (level.empty()) continue;
      auto value = anchor(a, level);
      if (!value) continue;
      mask = restrict_to(*state, mask ? &*mask : nullptr, level, *value);
    }
    return mask;
  }

  // ---- Placing -------------------------------------------------------------------------------
  void rollback(std::size_t mark) {
    while (stack.size() > mark) {
      const std::size_t i = stack.back();
      stack.pop_back();
      state->release(gang.members[i].key());
      placed[i] = 0;
      outcomes[i] = PlaceOutcome{};
    }
  }
  bool place_member(std::size_t i, const Candidate& mask, int p) {
    PlaceOutcome o = place_pod(*state, gang.members[i], *policy, mask ? &*mask : nullptr, detailed, cache);
    if (!o.placement) {
      if (!failure || failure->placed_before <= stack.size()) failure = Failure{i, o.why, stack.size(), p};
      outcomes[i] = std::move(o);
      return false;
    }
    node_of[i] = state->allocation(gang.members[i].key())->node;
    placed[i] = 1;
    stack.push_back(i);
    outcomes[i] = std::move(o);
    return true;
  }
  bool place_inside(int p, const Candidate& mask) {
    const Part& part = parts[p];
    if (part.leaf()) {
      const std::vector<std::size_t> waiting = waiting_in(p);
      const int need = need_of(p);
      if (static_cast<int>(waiting.size()) < need) return false;
      for (int k = 0; k < need; ++k) {
        if (!place_member(waiting[k], mask, p)) return false;
      }
      return true;
    }
    auto ok = std::count_if(part.children.begin(), part.children.end(), [&](int c) { return satisfied(c); });
    for (int c : part.children) {
      if (ok >= part.need_children) break;
      if (!satisfied(c) && place_part(c, mask)) ++ok;
    }
    return ok >= part.need_children;
  }
  /// Satisfies part `p` inside `base`, all or nothing.
  bool place_part(int p, const Candidate& base) {
    if (satisfied(p)) return true;
    const auto options = candidates(p, base);
    if (options.empty() && !failure) failure = Failure{std::nullopt, {}, stack.size(), p};
    for (const Candidate& c : options) {
      const std::size_t mark = stack.size();
      if (place_inside(p, c)) return true;
      rollback(mark);
    }
    return false;
  }

  // ---- Reasons -------------------------------------------------------------------------------
  [[nodiscard]] std::string part_label(int p) const {
    return parts[p].name.empty() ? fmt::format("gang {}", gang.name) : fmt::format("gang {} sub-group {}", gang.name, parts[p].name);
  }
  /// " (of sub-group b, within one value of node label rack; …)": where the failing member had
  /// to go: its part's required level and every enclosing part's, the PodGroup's last.
  [[nodiscard]] std::string where(int p) const {
    std::vector<std::string> clauses;
    if (!parts[p].name.empty()) clauses.push_back("of sub-group " + parts[p].name);
    bool levels = false;
    for (int a = p; a >= 0; a = parts[a].parent) {
      const std::string& level = parts[a].topology.required_level;
      if (level.empty()) continue;
      clauses.push_back(fmt::format("within one value of node label {}{}", level,
                                    a == p || parts[a].name.empty() ? "" : " (sub-group " + parts[a].name + "'s)"));
      levels = true;
    }
    if (clauses.empty()) return "";
    return fmt::format(" ({}{})", fmt::join(clauses, ", "), levels ? "; the counts are those of the value that came closest" : "");
  }
  /// `head`: "gang g needs 4 pods placed together"; `whole`: the failure undid the whole gang.
  [[nodiscard]] std::string failure_summary(const std::string& head, bool whole) const {
    const Failure& f = *failure;
    if (!f.member) {
      return fmt::format("{}: {} needs its pods on nodes with one value of node label {}, and no node it may use has one", head,
                         part_label(f.part), parts[f.part].topology.required_level);
    }
    if (f.placed_before == 0) return fmt::format("{}; its first member{} fits nowhere: {}", head, where(f.part), f.why.summary);
    return fmt::format("{}; once its first {} are placed (tentatively, on GPUs the reasons below count as held), this member{} "
                       "fits nowhere: {} Nothing of {} was placed.",
                       head, f.placed_before, where(f.part), f.why.summary, whole ? "the gang" : "it");
  }
  /// Every member of `members` not placed gets the reason of the failed minimum (or step).
  void explain_failure(const std::vector<std::size_t>& members, const std::string& head, bool whole) {
    const std::string summary = failure ? failure_summary(head, whole) : head + " could not be placed";
    const Code code = failure && failure->member ? failure->why.code : Code::kUnschedulable;
    for (std::size_t i : members) {
      if (placed[i] || part_of[i] < 0) continue;
      PlaceOutcome& o = outcomes[i];
      if (failure && failure->member == i) {
        o.why = failure->why;
        o.why.summary = summary;
      } else {
        o = PlaceOutcome{};
        o.why.code = code;
        o.why.summary = failure && failure->member
                            ? fmt::format("{}; member {} fits nowhere, so none is placed", head, gang.members[*failure->member].key())
                            : summary;
      }
      done[i] = 1;
    }
  }
};

GangPlacer::GangPlacer(ClusterState& state, const Gang& gang, const Policy& policy, std::size_t detailed, ExplainCache* cache)
    : impl_(std::make_unique<Impl>(&state, gang, &policy, detailed, cache)) {}
GangPlacer::~GangPlacer() = default;

bool GangPlacer::satisfied() const { return impl_->satisfied(0); }

bool GangPlacer::enough_members(std::string* why) const {
  std::vector<std::size_t> take;
  return impl_->by_count(0, take, why);
}

std::vector<std::size_t> GangPlacer::minimum_by_count() const { return gang_minimum_by_count(impl_->gang); }

std::vector<std::size_t> gang_minimum_by_count(const Gang& gang) {
  const GangPlacer::Impl counting(nullptr, gang, nullptr, 0, nullptr);
  std::vector<std::size_t> take;
  if (!counting.by_count(0, take, nullptr)) return {};
  std::sort(take.begin(), take.end());
  return take;
}

bool gang_satisfied(const Gang& gang) { return GangPlacer::Impl(nullptr, gang, nullptr, 0, nullptr).satisfied(0); }

bool gang_has_enough_members(const Gang& gang, std::string* why) {
  std::vector<std::size_t> take;
  return GangPlacer::Impl(nullptr, gang, nullptr, 0, nullptr).by_count(0, take, why);
}

std::size_t gang_running_in_tree(const Gang& gang) {
  const GangPlacer::Impl counting(nullptr, gang, nullptr, 0, nullptr);
  std::size_t n = 0;
  for (const auto& part : counting.parts) n += part.running_nodes.size();
  return n;
}

GangProgress gang_progress(const Gang& gang) { return GangPlacer::Impl(nullptr, gang, nullptr, 0, nullptr).progress(); }

GangProgress GangPlacer::progress() const { return impl_->progress(); }

std::optional<std::size_t> GangPlacer::next_member() const { return impl_->next_under(0); }

void GangPlacer::stop(const Explanation& why) {
  Impl& m = *impl_;
  for (std::size_t i = 0; i < m.gang.members.size(); ++i) {
    if (m.placed[i] || m.done[i]) continue;
    m.outcomes[i] = PlaceOutcome{std::nullopt, why};
    m.done[i] = 1;
  }
}

bool GangPlacer::place_minimum() {
  Impl& m = *impl_;
  if (m.satisfied(0)) return true;
  m.failure.reset();
  std::string why;
  if (!enough_members(&why)) {
    for (std::size_t i = 0; i < m.gang.members.size(); ++i) {
      if (m.done[i]) continue;
      m.outcomes[i].why.code = Code::kUnschedulable;
      m.outcomes[i].why.summary = fmt::format("gang {}{}; it waits for the rest", m.gang.name, why);
      m.done[i] = 1;
    }
    return false;
  }
  const std::size_t together = minimum_by_count().size();
  if (m.place_part(0, std::nullopt)) return true;
  std::vector<std::size_t> all(m.gang.members.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  m.explain_failure(all, fmt::format("gang {} needs {} pods placed together", m.gang.name, together), /*whole=*/true);
  return false;
}

std::optional<std::vector<std::size_t>> GangPlacer::place_step(std::optional<std::size_t> member) {
  Impl& m = *impl_;
  const std::optional<std::size_t> next = member ? member : next_member();
  if (!next || m.placed[*next] || m.done[*next]) return std::nullopt;
  const std::size_t i = *next;
  int top = m.part_of[i];  // the highest part not yet satisfied: it goes whole
  while (m.parts[top].parent >= 0 && !m.satisfied(m.parts[top].parent)) top = m.parts[top].parent;
  const std::size_t mark = m.stack.size();
  m.failure.reset();
  if (m.satisfied(top)) {  // one more member of a satisfied leaf, inside what its parts chose
    for (const Candidate& c : m.candidates(top, m.above(top))) {
      if (m.place_member(i, c, top)) return std::vector<std::size_t>{i};
    }
    if (!m.failure) m.failure = Impl::Failure{std::nullopt, {}, 0, top};
    PlaceOutcome& o = m.outcomes[i];
    if (m.failure->member) o.why = m.failure->why;
    o.why.summary = m.failure->member ? fmt::format("{}: this member{} fits nowhere: {}", m.part_label(top), m.where(top), m.failure->why.summary)
                                      : m.failure_summary(m.part_label(top), false);
    m.done[i] = 1;
    return std::vector<std::size_t>{};
  }
  std::vector<std::size_t> take;
  std::string why;
  if (m.by_count(top, take, &why) && m.place_part(top, m.above(top))) {
    return std::vector<std::size_t>(m.stack.begin() + static_cast<std::ptrdiff_t>(mark), m.stack.end());
  }
  std::vector<std::size_t> members;
  std::vector<std::size_t> below;
  std::vector<int> parts{top};
  while (!parts.empty()) {
    const int p = parts.back();
    parts.pop_back();
    for (std::size_t k : m.parts[p].members) below.push_back(k);
    parts.insert(parts.end(), m.parts[p].children.begin(), m.parts[p].children.end());
  }
  if (take.empty() && !why.empty()) {
    for (std::size_t k : below) {
      if (m.placed[k] || m.done[k]) continue;
      m.outcomes[k].why.code = Code::kUnschedulable;
      m.outcomes[k].why.summary = fmt::format("gang {}{}; it waits for the rest", m.gang.name, why);
      m.done[k] = 1;
    }
    return std::vector<std::size_t>{};
  }
  m.explain_failure(below, fmt::format("{} needs {} pods placed together", m.part_label(top), take.size()), /*whole=*/false);
  return std::vector<std::size_t>{};
}

void GangPlacer::undo_step(const std::vector<std::size_t>& members, const Explanation& why) {
  Impl& m = *impl_;
  for (std::size_t i : members) {
    if (!m.placed[i]) continue;
    m.state->release(m.gang.members[i].key());
    m.placed[i] = 0;
    m.done[i] = 1;
    m.outcomes[i] = PlaceOutcome{std::nullopt, why};
    m.stack.erase(std::find(m.stack.begin(), m.stack.end(), i));
  }
}

void GangPlacer::undo_all(const Explanation& why) {
  Impl& m = *impl_;
  m.rollback(0);
  for (std::size_t i = 0; i < m.gang.members.size(); ++i) {
    if (m.part_of[i] < 0) continue;
    m.outcomes[i] = PlaceOutcome{std::nullopt, why};
    m.done[i] = 1;
  }
}

const std::vector<PlaceOutcome>& GangPlacer::outcomes() const { return impl_->outcomes; }
bool GangPlacer::orphan(std::size_t member) const { return impl_->part_of[member] < 0; }

std::vector<PlaceOutcome> place_gang(ClusterState& state, const Gang& gang, const Policy& policy, std::size_t detailed,
                                     ExplainCache* cache) {
  GangPlacer placer(state, gang, policy, detailed, cache);
  if (placer.place_minimum()) {
    while (placer.place_step()) {
    }
  }
  return placer.outcomes();
}

}  // namespace fracpack
