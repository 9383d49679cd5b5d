// Nodes learned from the calls themselves: kube-scheduler without nodeCacheCapable (and a gRPC
// client that sends ExtenderArgs.nodes) sends full v1 Nodes, and fracpack takes the ones it does
// not know yet, so an extender started without --cluster still knows every candidate.
#pragma once

#include <map>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/extender.hpp"

namespace fracpack::api {

/// Applies those `objects` (v1 Nodes, parallel to `names`) whose names the core does not know.
/// Returns node name → why it was refused, for nodes that do not decode; they stay unknown and
/// the fronts answer them unresolvable with that reason (see with_rejections()).
std::map<std::string, std::string> learn_unknown_nodes(Extender& core, NodeNames names,
                                                       const std::vector<const nlohmann::json*>& objects);

/// Replaces the "not known to fracpack" reason of each rejected node with why it was refused.
void with_rejections(FilterAnswer& answer, const std::map<std::string, std::string>& rejected);

}  // namespace fracpack::api
