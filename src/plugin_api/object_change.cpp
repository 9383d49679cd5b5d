#include "plugin_api/object_change.hpp"

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/core/quoting.hpp"

namespace fracpack::api {

Status stage_objects(const std::vector<nlohmann::json>& objects, const DecodeConfig& decode, StagedObjects& staged,
                     std::vector<std::string>* warnings) {
  StagedObjects next = staged;
  std::vector<std::string> skipped;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const nlohmann::json& o = objects[i];
    const std::string kind = k8s::kind_of(o);
    auto at = [&](const Status& st) { return Status(st.code(), fmt::format("objects[{}]: {}", i, st.message())); };
    std::string name;
    if (kind == "Node") {
      auto n = k8s::decode_node(o, decode);
      if (!n) return at(n.status());
      name = n->name;
      next.node_objects[name] = o;
      next.change.nodes.push_back(std::move(*n));
    } else if (kind == "Queue") {
      auto q = queues::decode_queue(o);
      if (!q) return at(q.status());
      name = q->name;
      next.change.queues.push_back(std::move(*q));
    } else if (kind == "PodGroup") {
      auto g = queues::decode_pod_group(o);
      if (!g) return at(g.status());
      name = g->key();
      next.change.groups.push_back(std::move(*g));
    } else if (kind == "PriorityClass") {
      auto v = o.find("value");
      name = k8s::metadata_string(o, "name");
      if (v == o.end() || !v->is_number_integer() || name.empty() || *v < INT32_MIN || *v > INT32_MAX) {
        return at(invalid_argument("PriorityClass {}: needs metadata.name and an integer value (32 bits)", excerpt(name)));
      }
      next.change.priority_classes.emplace_back(name, v->get<std::int32_t>());
    } else {
      skipped.push_back(fmt::format("{}: kind \"{}\" is not used by the extender; ignored", k8s::describe(o, 0), excerpt(kind)));
      continue;
    }
    next.store.objects.push_back({kind, name, &o});
  }
  staged = std::move(next);
  if (warnings != nullptr) warnings->insert(warnings->end(), skipped.begin(), skipped.end());
  return Status::ok();
}

}  // namespace fracpack::api
