// Required node affinity: which nodes a pod may run on, beyond its nodeSelector.
//
// The shape and rules are Kubernetes' v1 NodeSelector (k8s.io/api/core/v1 types.go, and
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity): a pod's
// `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution` holds terms; a node
// matches when ANY term matches, and a term matches when ALL its matchExpressions do. An empty
// term list means "any node". Only node labels are matched (matchFields is refused at decoding).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fracpack {

/// One `matchExpressions` entry. In/NotIn need ≥ 1 value; Exists/DoesNotExist take none;
/// Gt/Lt take one integer value compared with the label read as an integer.
struct NodeSelectorRequirement {
  enum class Op : unsigned char { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Op op = Op::kIn;
  std::vector<std::string> values;
  bool operator==(const NodeSelectorRequirement&) const = default;
};

/// One `nodeSelectorTerms` entry: every requirement must hold.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  bool operator==(const NodeSelectorTerm&) const = default;
};

/// The operator's name as Kubernetes spells it ("In", "NotIn", …).
std::string_view op_name(NodeSelectorRequirement::Op op);

/// Whether `labels` satisfy the requirement (Kubernetes labels.Selector semantics: NotIn and
/// DoesNotExist hold for an absent label; Gt/Lt fail when the label is absent or not an integer).
bool matches(const NodeSelectorRequirement& r, const std::map<std::string, std::string>& labels);

/// Whether `labels` satisfy at least one term (true for an empty list; a term without
/// expressions matches no node, as in Kubernetes).
bool matches(const std::vector<NodeSelectorTerm>& terms, const std::map<std::string, std::string>& labels);

/// "nvidia.com/gpu.product In [V100M16, V100M32]" — terms joined by " or ", expressions by " and ".
std::string describe(const std::vector<NodeSelectorTerm>& terms);

}  // namespace fracpack
