#include "plugin_api/node_learning.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::api {

std::map<std::string, std::string> learn_nodes(Extender& core, NodeNames names, const std::vector<const nlohmann::json*>& objects) {
  std::map<std::string, std::string> rejected;
  const auto positions = core.nodes_to_apply(names, objects);
  if (positions.empty()) return rejected;
  std::map<std::string, nlohmann::json> learned;  // a node sent twice: applied once (the last copy)
  for (std::size_t i : positions) {
    nlohmann::json node = *objects[i];
    if (!node.contains("kind")) node["kind"] = "Node";
    learned[std::string(names[i])] = std::move(node);
  }
  std::vector<nlohmann::json> all;
  for (const auto& [name, node] : learned) all.push_back(node);
  std::vector<std::string> warnings;
  if (core.apply(all, &warnings).is_ok()) return rejected;
  // One bad node must not keep the good ones out: apply them one by one (the rare path).
  for (auto& [name, node] : learned) {
    if (Status st = core.apply({node}, &warnings); !st.is_ok()) {
      spdlog::warn("node {} sent by the scheduler: {}", printable(excerpt(name, 253)), printable(excerpt(st.message(), 1024)));
      rejected[name] = st.message();
    }
  }
  return rejected;
}

void with_rejections(FilterAnswer& answer, const std::map<std::string, std::string>& rejected) {
  if (rejected.empty()) return;
  auto refused = [&](const std::string& node) -> const std::string* {
    auto it = rejected.find(node);
    return it == rejected.end() ? nullptr : &it->second;
  };
  for (auto& [node, why] : answer.unresolvable) {
    if (const auto* r = refused(node)) why = "the Node sent was refused: " + *r;
  }
  // A known node whose new object was refused is not placed on by its old one.
  NodeReasons moved;
  std::erase_if(answer.passed, [&](const std::string& node) {
    const auto* r = refused(node);
    if (r != nullptr) moved.emplace_back(node, "the Node sent was refused: " + *r);
    return r != nullptr;
  });
  std::erase_if(answer.failed, [&](const auto& entry) {
    const auto* r = refused(entry.first);
    if (r != nullptr) moved.emplace_back(entry.first, "the Node sent was refused: " + *r);
    return r != nullptr;
  });
  answer.unresolvable.insert(answer.unresolvable.end(), moved.begin(), moved.end());
}

}  // namespace fracpack::api
