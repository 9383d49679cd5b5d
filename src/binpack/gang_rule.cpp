// A PodGroup's gang rule checked as KAI's PodGroup validation and min-subgroups design do.
#include <map>
#include <set>

#include <fmt/format.h>

#include "fracpack/binpack/gang.hpp"

namespace fracpack {
namespace {

std::string sub_group_field(std::size_t i, const char* name) { return fmt::format("spec.subGroups[{}].{}", i, name); }

/// Whether following parents from sub-group `i` comes back to it.
bool in_cycle(const GangRule& rule, const std::map<std::string, std::size_t>& by_name, std::size_t i) {
  std::set<std::size_t> seen{i};
  for (std::string parent = rule.sub_groups[i].parent; !parent.empty();) {
    auto it = by_name.find(parent);
    if (it == by_name.end()) return false;
    if (!seen.insert(it->second).second) return true;
    parent = rule.sub_groups[it->second].parent;
  }
  return false;
}

/// minMember and minSubGroup of one level (`where`: "spec" or "spec.subGroups[i]").
std::optional<std::string> check_level(const std::string& where, int min_member, std::optional<int> min_sub_group,
                                       std::size_t children) {
  if (min_member < 0) return fmt::format("{}.minMember = {}: must not be negative", where, min_member);
  if (!min_sub_group) return std::nullopt;
  if (min_member > 0) {
    return fmt::format("{}: minMember and minSubGroup are mutually exclusive (minMember counts pods, minSubGroup child "
                       "sub-groups)", where);
  }
  if (children == 0) return fmt::format("{}.minSubGroup = {}: it has no child sub-groups to count", where, *min_sub_group);
  if (*min_sub_group < 1 || static_cast<std::size_t>(*min_sub_group) > children) {
    return fmt::format("{}.minSubGroup = {}: must be from 1 to its {} child sub-group(s)", where, *min_sub_group, children);
  }
  return std::nullopt;
}

}  // namespace

bool GangRule::structured() const { return !topology.empty() || !sub_groups.empty(); }

std::optional<std::string> check_gang_rule(const GangRule& rule) {
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {
    const std::string& name = rule.sub_groups[i].name;
    if (name.empty()) return fmt::format("{} is empty", sub_group_field(i, "name"));
    if (!by_name.emplace(name, i).second) return fmt::format("{} = \"{}\": another sub-group has that name", sub_group_field(i, "name"), name);
  }
  std::map<std::string, std::size_t> children;  // parent name ("" the PodGroup) → direct children
  for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {
    const SubGroupSpec& s = rule.sub_groups[i];
    if (!s.parent.empty() && !by_name.contains(s.parent)) {
      return fmt::format("{} = \"{}\": no sub-group has that name", sub_group_field(i, "parent"), s.parent);
    }
    if (in_cycle(rule, by_name, i)) return fmt::format("{} = \"{}\": its parents form a cycle", sub_group_field(i, "parent"), s.parent);
    ++children[s.parent];
  }
  if (auto bad = check_level("spec", rule.min_member, rule.min_sub_group, children[""])) return bad;
  for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {
    const SubGroupSpec& s = rule.sub_groups[i];
    const std::size_t below = children.contains(s.name) ? children.at(s.name) : 0;
    const std::string where = fmt::format("spec.subGroups[{}]", i);
    if (auto bad = check_level(where, below > 0 ? 0 : s.min_member, s.min_sub_group, below)) return bad;
  }
  return std::nullopt;
}

}  // namespace fracpack
