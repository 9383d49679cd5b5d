// libFuzzer target: each gRPC request decoder. The first byte picks the method (Filter,
// Prioritize, Bind, Preempt, Apply, Remove, Release, Sync, Explain, Snapshot), the rest is its
// request message as protobuf bytes; a message that parses goes to that method's handler over an
// in-memory extender with two GPU nodes. Any bytes: a gRPC status, never a crash.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"
#include "plugin_api/grpc_services.hpp"
#include "plugin_api/metrics.hpp"

namespace {

using namespace fracpack;

nlohmann::json gpu_node(const char* name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.memory", "81920"}, {"nvidia.com/gpu.count", "4"}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"nvidia.com/gpu", "4"}, {"pods", "110"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}, {{"type", "gpu-fractioning.nvidia.com/Ready"}, {"status", "True"}}}}}}};
}

struct Services {
  std::unique_ptr<Extender> core;
  api::Metrics metrics;
  std::unique_ptr<api::ExtenderService> extender;
  std::unique_ptr<api::ClusterService> cluster;

  Services() {
    auto opened = Extender::open(ExtenderOptions{});
    if (!opened) std::abort();
    core = std::move(*opened);
    if (!core->apply({gpu_node("gpu-a"), gpu_node("gpu-b")}, nullptr).is_ok()) std::abort();
    extender = std::make_unique<api::ExtenderService>(*core, metrics, nullptr);
    cluster = std::make_unique<api::ClusterService>(*core, metrics, nullptr);
  }
};

template <class Request, class Response, class Service, class Handler>
void call(Service& service, Handler handler, const std::uint8_t* data, std::size_t size) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  Response response;
  (void)(service.*handler)(&request, &response);
}

}  // namespace

/// The services' handlers are private (only their raw methods, after the access check, call
/// them); this friend hands the fuzzer parsed messages.
struct api::FuzzAccess {
  static void dispatch(Services& s, std::uint8_t which, const std::uint8_t* body, std::size_t n) {
    namespace v1 = fracpack::v1;
    switch (which % 10) {
      case 0: call<v1::ExtenderArgs, v1::ExtenderFilterResult>(*s.extender, &ExtenderService::filter, body, n); break;
      case 1: call<v1::ExtenderArgs, v1::HostPriorityList>(*s.extender, &ExtenderService::prioritize, body, n); break;
      case 2: call<v1::ExtenderBindingArgs, v1::ExtenderBindingResult>(*s.extender, &ExtenderService::bind, body, n); break;
      case 3: call<v1::ExtenderPreemptionArgs, v1::ExtenderPreemptionResult>(*s.extender, &ExtenderService::preempt, body, n); break;
      case 4: call<v1::ApplyRequest, v1::ApplyResponse>(*s.cluster, &ClusterService::apply, body, n); break;
      case 5: call<v1::RemoveRequest, v1::RemoveResponse>(*s.cluster, &ClusterService::remove, body, n); break;
      case 6: call<v1::ReleaseRequest, v1::ReleaseResponse>(*s.cluster, &ClusterService::release, body, n); break;
      case 7: call<v1::SyncRequest, v1::SyncResponse>(*s.cluster, &ClusterService::sync, body, n); break;
      case 8: call<v1::ExplainRequest, v1::ExplainResponse>(*s.cluster, &ClusterService::explain, body, n); break;
      default: call<v1::SnapshotRequest, v1::SnapshotResponse>(*s.cluster, &ClusterService::snapshot, body, n); break;
    }
  }
};

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static Services s;  // one ledger for the whole run: binds accumulate, as on a server
  api::FuzzAccess::dispatch(s, data[0], data + 1, size - 1);
  return 0;
}
