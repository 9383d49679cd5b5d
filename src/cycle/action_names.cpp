// KAI's action names and its `actions` setting (fracpack/queues/cycle.hpp).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "fracpack/queues/cycle.hpp"

namespace fracpack::cycle {
namespace {

constexpr std::array<std::pair<ActionKind, std::string_view>, 5> kNames{{
    {ActionKind::kAllocate, "allocate"},
    {ActionKind::kConsolidation, "consolidation"},
    {ActionKind::kReclaim, "reclaim"},
    {ActionKind::kPreempt, "preempt"},
    {ActionKind::kStaleGangEviction, "stalegangeviction"},
}};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view action_name(ActionKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

const std::vector<ActionKind>& default_actions() {
  static const std::vector<ActionKind> kDefault{ActionKind::kAllocate, ActionKind::kConsolidation, ActionKind::kReclaim,
                                                ActionKind::kPreempt, ActionKind::kStaleGangEviction};
  return kDefault;
}

Result<std::vector<ActionKind>> parse_actions(std::string_view text) {
  const std::string_view all = text;
  std::vector<ActionKind> out;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = trimmed(text.substr(0, comma));
    auto it = std::find_if(kNames.begin(), kNames.end(), [&](const auto& n) { return n.second == entry; });
    if (it == kNames.end()) {
      return invalid_argument("actions \"{}\": \"{}\" is not one of allocate, consolidation, reclaim, preempt, stalegangeviction",
                              all, entry);
    }
    if (std::find(out.begin(), out.end(), it->first) != out.end()) {
      return invalid_argument("actions \"{}\": \"{}\" is named twice", all, entry);
    }
    out.push_back(it->first);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace fracpack::cycle
