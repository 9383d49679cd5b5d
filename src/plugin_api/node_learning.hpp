// Nodes learned from the calls themselves: kube-scheduler without nodeCacheCapable (and a gRPC
// client that sends ExtenderArgs.nodes) sends full v1 Nodes, and fracpack takes the ones it does
// not know yet, so an extender started without --cluster still knows every candidate.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/extender.hpp"

namespace fracpack::api {

/// Applies those `objects` (v1 Nodes, parallel to `names`) whose names the core does not know.
/// A node that does not decode is logged and left unknown: Filter then answers it unresolvable.
void learn_unknown_nodes(Extender& core, const std::vector<std::string>& names, const std::vector<const nlohmann::json*>& objects);

}  // namespace fracpack::api
