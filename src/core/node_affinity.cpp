#include "fracpack/core/node_affinity.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack {

std::string_view op_name(NodeSelectorRequirement::Op op) {
  using Op = NodeSelectorRequirement::Op;
  switch (op) {
    case Op::kIn: return "In";
    case Op::kNotIn: return "NotIn";
    case Op::kExists: return "Exists";
    case Op::kDoesNotExist: return "DoesNotExist";
    case Op::kGt: return "Gt";
    case Op::kLt: return "Lt";
  }
  return "?";
}

namespace {

bool parse_int(const std::string& text, long long& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end && !text.empty();
}

}  // namespace

bool matches(const NodeSelectorRequirement& r, const std::map<std::string, std::string>& labels) {
  using Op = NodeSelectorRequirement::Op;
  const auto it = labels.find(r.key);
  const bool present = it != labels.end();
  const auto listed = [&] { return present && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  switch (r.op) {
    case Op::kIn: return listed();
    case Op::kNotIn: return !listed();
    case Op::kExists: return present;
    case Op::kDoesNotExist: return !present;
    case Op::kGt:
    case Op::kLt: {
      long long label = 0;
      long long bound = 0;
      if (!present || r.values.size() != 1 || !parse_int(it->second, label) || !parse_int(r.values[0], bound)) return false;
      return r.op == Op::kGt ? label > bound : label < bound;
    }
  }
  return false;
}

bool matches(const std::vector<NodeSelectorTerm>& terms, const std::map<std::string, std::string>& labels) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& t) {
    return !t.match_expressions.empty() &&  // an empty term matches no node (Kubernetes nodeaffinity)
           std::all_of(t.match_expressions.begin(), t.match_expressions.end(),
                       [&](const NodeSelectorRequirement& r) { return matches(r, labels); });
  });
}

std::string describe(const std::vector<NodeSelectorTerm>& terms) {
  std::vector<std::string> parts;
  for (const auto& t : terms) {
    std::vector<std::string> exprs;
    for (const auto& r : t.match_expressions) {
      exprs.push_back(r.values.empty() ? fmt::format("{} {}", excerpt(r.key), op_name(r.op))
                                       : fmt::format("{} {} [{}]", excerpt(r.key), op_name(r.op),
                                                     excerpt(fmt::format("{}", fmt::join(r.values, ", ")))));
    }
    parts.push_back(exprs.empty() ? std::string("(empty term: no node)") : fmt::format("{}", fmt::join(exprs, " and ")));
  }
  return fmt::format("{}", fmt::join(parts, " or "));
}

}  // namespace fracpack
