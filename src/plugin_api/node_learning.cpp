#include "plugin_api/node_learning.hpp"

#include <algorithm>
#include <unordered_set>

#include <spdlog/spdlog.h>

namespace fracpack::api {

std::map<std::string, std::string> learn_unknown_nodes(Extender& core, NodeNames names,
                                                       const std::vector<const nlohmann::json*>& objects) {
  std::map<std::string, std::string> rejected;
  const auto unknown_list = core.unknown_nodes(std::vector<std::string>(names.begin(), names.end()));
  if (unknown_list.empty()) return rejected;
  const std::unordered_set<std::string> unknown(unknown_list.begin(), unknown_list.end());  // 5,000 new nodes: no n² scan
  std::vector<std::pair<std::string, nlohmann::json>> learned;
  for (std::size_t i = 0; i < names.size() && i < objects.size(); ++i) {
    if (unknown.count(std::string(names[i])) == 0) continue;
    nlohmann::json node = *objects[i];
    if (!node.contains("kind")) node["kind"] = "Node";
    learned.emplace_back(std::string(names[i]), std::move(node));
  }
  std::vector<nlohmann::json> all;
  for (const auto& [name, node] : learned) all.push_back(node);
  std::vector<std::string> warnings;
  if (core.apply(all, &warnings).is_ok()) return rejected;
  // One bad node must not keep the good ones out: apply them one by one (the rare path).
  for (auto& [name, node] : learned) {
    if (Status st = core.apply({node}, &warnings); !st.is_ok()) {
      spdlog::warn("node {} sent by the scheduler: {}", name, st.message());
      rejected[name] = st.message();
    }
  }
  return rejected;
}

void with_rejections(FilterAnswer& answer, const std::map<std::string, std::string>& rejected) {
  for (auto& [node, why] : answer.unresolvable) {
    if (auto it = rejected.find(node); it != rejected.end()) why = "the Node sent was refused: " + it->second;
  }
}

}  // namespace fracpack::api
