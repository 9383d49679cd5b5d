#include "plugin_api/node_learning.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace fracpack::api {

void learn_unknown_nodes(Extender& core, const std::vector<std::string>& names, const std::vector<const nlohmann::json*>& objects) {
  const auto unknown = core.unknown_nodes(names);
  if (unknown.empty()) return;
  std::vector<nlohmann::json> learned;
  for (std::size_t i = 0; i < names.size() && i < objects.size(); ++i) {
    if (std::find(unknown.begin(), unknown.end(), names[i]) == unknown.end()) continue;
    nlohmann::json node = *objects[i];
    if (!node.contains("kind")) node["kind"] = "Node";
    learned.push_back(std::move(node));
  }
  std::vector<std::string> warnings;
  if (Status st = core.apply(learned, &warnings); !st.is_ok()) spdlog::warn("nodes sent by the scheduler: {}", st.message());
}

}  // namespace fracpack::api
