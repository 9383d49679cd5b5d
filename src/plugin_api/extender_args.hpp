// kube-scheduler's ExtenderArgs (the body of POST /filter and /prioritize, k8s.io/kube-scheduler
// extender/v1 ExtenderArgs) read without building a document for its node list.
//
// With nodeCacheCapable, kube-scheduler sends every candidate's name with every call: 5,000 names
// are ~65 KB of JSON, and reading them into an nlohmann document (one allocation per name, then a
// copy per name) was most of the JSON front's time. simdjson's On-Demand parser walks the body
// once: the names become views into the reader's buffer, and only the Pod object (~3 KB) is
// handed to nlohmann, as text, for the pod decoder. Nodes (a full NodeList, without
// nodeCacheCapable: tens of MB at 5,000 nodes) are parsed by simdjson's DOM parser, and become
// nlohmann documents only when asked for (node_objects(): a server told the cluster learns Nodes
// from them); a server following the API server only echoes the passing ones (node_text()). Any
// field fracpack does not use is still read fully, so a malformed body is refused as before,
// wherever the mistake is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include "fracpack/core/status.hpp"
#include "plugin_api/on_demand.hpp"

namespace fracpack::api {

/// Reads one ExtenderArgs at a time; what it returns is valid until the next read(). Reuses its
/// buffers between calls (one per thread: not thread-safe).
class ExtenderArgsReader {
 public:
  /// Reads `body`. kInvalidArgument, naming the field, when it is not JSON ("the body is not valid
  /// JSON: ..."), not an object, has no Pod object, NodeNames that is not a list of strings, Nodes
  /// that is not a NodeList, a node in Nodes without metadata.name, neither NodeNames nor Nodes,
  /// or trailing content after the object. `type` names the object in messages ("ExtenderArgs").
  Status read(std::string_view body, const char* type = "ExtenderArgs");

  /// The Pod, as nlohmann JSON (what the pod decoder reads).
  [[nodiscard]] const nlohmann::json& pod() const { return pod_; }
  /// The candidates' names in the order sent: NodeNames, or each Nodes item's metadata.name.
  [[nodiscard]] const std::vector<std::string_view>& node_names() const { return names_; }
  /// True when the names came as NodeNames (nodeCacheCapable); false for a NodeList.
  [[nodiscard]] bool cache_capable() const { return cache_capable_; }
  /// Nodes' items as nlohmann documents, parallel to node_names(); empty with NodeNames. Built at
  /// the first call after a read() (O(the NodeList)).
  [[nodiscard]] const std::vector<const nlohmann::json*>& node_objects() const;
  /// Nodes' item `i` as compact JSON text (what a Filter answer echoes).
  [[nodiscard]] std::string node_text(std::size_t i) const;

  /// Drops what the last read() holds and gives back buffers above `keep` bytes, so one 8 MiB
  /// body does not pin its memory on every serving thread (a few 5,000-name bodies stay cached).
  void trim(std::size_t keep = 1u << 20);

 private:
  /// Reads the NodeList text into names_ and items_ (the body's Nodes field).
  Status read_nodes(std::string_view text, const char* type);

  OnDemandParser parser_;
  simdjson::dom::parser nodes_parser_;  ///< the NodeList, when sent; items_ point into it
  nlohmann::json pod_;
  std::vector<std::string_view> names_;
  std::vector<simdjson::dom::element> items_;
  mutable std::vector<nlohmann::json> documents_;  ///< node_objects(), built on demand
  mutable std::vector<const nlohmann::json*> objects_;
  mutable bool objects_built_ = false;
  bool cache_capable_ = true;
};

}  // namespace fracpack::api
