// Nodes learned from the calls themselves: kube-scheduler without nodeCacheCapable (and a gRPC
// client that sends ExtenderArgs.nodes) sends full v1 Nodes, and fracpack takes the ones it does
// not know yet, and the ones that changed (a node cordoned, relabelled, or with fewer GPUs
// allocatable), so an extender started without --cluster still knows every candidate as it is.
#pragma once

#include <map>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"

namespace fracpack::api {

/// Applies those `objects` (v1 Nodes, parallel to `names`) the core does not know, or knows with
/// other contents (Extender::nodes_to_apply).
/// Returns node name → why it was refused, for nodes that do not decode (a new one stays unknown,
/// a known one keeps its old object in the ledger); the fronts answer them unresolvable with that
/// reason (see with_rejections()).
std::map<std::string, std::string> learn_nodes(Extender& core, NodeNames names, const std::vector<const nlohmann::json*>& objects);

/// Answers each rejected node unresolvable, with why its Node was refused: an unknown one instead
/// of "not known to fracpack", a known one instead of its verdict by the object it replaced.
void with_rejections(FilterAnswer& answer, const std::map<std::string, std::string>& rejected);

}  // namespace fracpack::api
