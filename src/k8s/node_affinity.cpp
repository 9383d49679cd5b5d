// Decoding of required node affinity (k8s.io/api/core/v1 NodeAffinity).
#include <charconv>

#include "fracpack/k8s/json_fields.hpp"
#include "k8s/pod_parts.hpp"

namespace fracpack::k8s {

using nlohmann::json;
namespace {

using Op = NodeSelectorRequirement::Op;

std::optional<Op> parse_op(const std::string& name) {
  for (Op op : {Op::kIn, Op::kNotIn, Op::kExists, Op::kDoesNotExist, Op::kGt, Op::kLt}) {
    if (op_name(op) == name) return op;
  }
  return std::nullopt;
}

bool is_integer(const std::string& text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  return !text.empty() && ec == std::errc{} && ptr == end;
}

Result<NodeSelectorRequirement> read_requirement(const json& e, const std::string& where) {
  if (!e.is_object()) return invalid_argument("{} must be a map, not a {}", where, e.type_name());
  NodeSelectorRequirement r;
  const json* key = member(e, "key");
  if (key == nullptr || !key->is_string() || key->get<std::string>().empty()) {
    return invalid_argument("{}.key must be a non-empty string", where);
  }
  r.key = key->get<std::string>();
  const json* op = member(e, "operator");
  if (op == nullptr || !op->is_string()) return invalid_argument("{}.operator must be a string", where);
  auto parsed = parse_op(op->get<std::string>());
  if (!parsed) {
    return invalid_argument("{}.operator \"{}\" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt", where,
                            excerpt(op->get<std::string>()));
  }
  r.op = *parsed;
  auto values = optional_array(e, "values", where);
  if (!values) return values.status();
  if (*values != nullptr) {
    for (const auto& v : **values) {
      if (!v.is_string()) return invalid_argument("{}.values must be strings, not a {}", where, v.type_name());
      r.values.push_back(v.get<std::string>());
    }
  }
  switch (r.op) {
    case Op::kIn:
    case Op::kNotIn:
      if (r.values.empty()) return invalid_argument("{}: operator {} needs at least one value", where, op_name(r.op));
      break;
    case Op::kExists:
    case Op::kDoesNotExist:
      if (!r.values.empty()) return invalid_argument("{}: operator {} takes no values", where, op_name(r.op));
      break;
    case Op::kGt:
    case Op::kLt:
      if (r.values.size() != 1 || !is_integer(r.values[0])) {
        return invalid_argument("{}: operator {} needs exactly one integer value", where, op_name(r.op));
      }
      break;
  }
  return r;
}

}  // namespace

Result<std::vector<NodeSelectorTerm>> read_required_node_affinity(const json& spec, const std::string& who) {
  std::vector<NodeSelectorTerm> terms;
  const std::string base = who + ": spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  const json* affinity = member(spec, "affinity");
  const json* node_affinity = affinity != nullptr ? member(*affinity, "nodeAffinity") : nullptr;
  const json* required =
      node_affinity != nullptr ? member(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (required == nullptr) return terms;
  auto list = optional_array(*required, "nodeSelectorTerms", base);
  if (!list) return list.status();
  if (*list == nullptr || (*list)->empty()) return invalid_argument("{}.nodeSelectorTerms must list at least one term", base);
  for (std::size_t t = 0; t < (*list)->size(); ++t) {
    const json& term = (**list)[t];
    const std::string where = fmt::format("{}.nodeSelectorTerms[{}]", base, t);
    if (!term.is_object()) return invalid_argument("{} must be a map, not a {}", where, term.type_name());
    if (const json* fields = member(term, "matchFields"); fields != nullptr && !(fields->is_array() && fields->empty())) {
      return invalid_argument("{}.matchFields is not supported; express the rule with matchExpressions on node labels", where);
    }
    auto exprs = optional_array(term, "matchExpressions", where);
    if (!exprs) return exprs.status();
    NodeSelectorTerm out;
    if (*exprs != nullptr) {
      for (std::size_t i = 0; i < (*exprs)->size(); ++i) {
        auto r = read_requirement((**exprs)[i], fmt::format("{}.matchExpressions[{}]", where, i));
        if (!r) return r.status();
        out.match_expressions.push_back(std::move(*r));
      }
    }
    terms.push_back(std::move(out));
  }
  return terms;
}

}  // namespace fracpack::k8s
