// fracpack.v1.Cluster: Apply, Remove, Release, Sync, Explain, Snapshot over the extender core.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fracpack/core/quoting.hpp"
#include "plugin_api/grpc_convert.hpp"
#include "plugin_api/grpc_services.hpp"
#include "plugin_api/grpc_status.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

/// Every entry of a repeated bytes field as a JSON object; the first bad one is the error.
template <class Repeated>
Result<std::vector<json>> parse_objects(const Repeated& items, const char* field) {
  std::vector<json> out;
  out.reserve(static_cast<std::size_t>(items.size()));
  for (int i = 0; i < items.size(); ++i) {
    auto object = parse_object(items.Get(i), fmt::format("{}[{}]", field, i));
    if (!object) return object.status();
    out.push_back(std::move(*object));
  }
  return out;
}

}  // namespace

grpc::Status ClusterService::apply(const v1::ApplyRequest* req, v1::ApplyResponse* out) {
  auto objects = parse_objects(req->objects(), "objects");
  if (!objects) return to_grpc(objects.status());
  std::vector<std::string> warnings;
  if (Status st = core_.apply(*objects, &warnings); !st.is_ok()) return to_grpc(st, "objects");
  for (auto& w : warnings) out->add_warnings(std::move(w));
  spdlog::info("apply: {} objects, {} warnings", objects->size(), out->warnings_size());
  return grpc::Status::OK;
}

grpc::Status ClusterService::remove(const v1::RemoveRequest* req, v1::RemoveResponse*) {
  if (req->name().empty()) return to_grpc({Code::kInvalidArgument, "RemoveRequest: name is empty", "name"});
  Status st = core_.remove(req->kind(), req->name());
  if (st.is_ok()) spdlog::info("remove {} {}", printable(req->kind()), printable(req->name()));
  return to_grpc(st, "kind");
}

grpc::Status ClusterService::release(const v1::ReleaseRequest* req, v1::ReleaseResponse*) {
  if (req->pod_name().empty()) return to_grpc({Code::kInvalidArgument, "ReleaseRequest: pod_name is empty", "pod_name"});
  const std::string key = (req->pod_namespace().empty() ? "default" : req->pod_namespace()) + "/" + req->pod_name();
  Status st = core_.release(key);
  if (st.is_ok()) spdlog::info("release {}", printable(key));
  return to_grpc(st);
}

grpc::Status ClusterService::sync(const v1::SyncRequest* req, v1::SyncResponse* out) {
  auto pods = parse_objects(req->bound_pods(), "bound_pods");
  if (!pods) return to_grpc(pods.status());
  std::vector<std::string> conflicts;
  if (Status st = core_.sync(*pods, req->cluster_empty(), &conflicts); !st.is_ok()) return to_grpc(st, "bound_pods");
  for (auto& c : conflicts) out->add_conflicts(std::move(c));
  spdlog::info("sync: {} bound pods, {} conflicts", pods->size(), out->conflicts_size());
  return grpc::Status::OK;
}

grpc::Status ClusterService::explain(const v1::ExplainRequest* req, v1::ExplainResponse* out) {
  auto pod = parse_object(req->pod(), "pod");
  if (!pod) return to_grpc(pod.status());
  auto explanation = core_.explain(*pod);
  if (!explanation) return to_grpc(explanation.status(), "pod");
  to_proto(*explanation, out);
  return grpc::Status::OK;
}

grpc::Status ClusterService::snapshot(const v1::SnapshotRequest*, v1::SnapshotResponse* out) {
  to_proto(core_.snapshot(), out);
  return grpc::Status::OK;
}

}  // namespace fracpack::api
