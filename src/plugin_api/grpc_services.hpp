// The gRPC services (proto/fracpack/v1): thin handlers over the extender core.
//
// Every method is registered raw (the request arrives as bytes) and parsed by grpc_unary.hpp, so
// a request that is not protobuf is the caller's INVALID_ARGUMENT naming the message type. (gRPC
// 1.51's stock paths answer it with INTERNAL in the sync API and a bare UNIMPLEMENTED in the
// callback API.) Each answer goes through grpc_status.hpp's one mapping and is counted in Metrics
// under front "grpc".
#pragma once

#include "fracpack/server/extender.hpp"
#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/grpc_unary.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"
#include "plugin_api/pod_cache.hpp"

namespace fracpack::api {

using ExtenderRawService = v1::Extender::WithRawCallbackMethod_Filter<v1::Extender::WithRawCallbackMethod_Prioritize<
    v1::Extender::WithRawCallbackMethod_Bind<v1::Extender::WithRawCallbackMethod_Preempt<v1::Extender::Service>>>>;

using ClusterRawService = v1::Cluster::WithRawCallbackMethod_Apply<v1::Cluster::WithRawCallbackMethod_Remove<
    v1::Cluster::WithRawCallbackMethod_Release<v1::Cluster::WithRawCallbackMethod_Sync<
        v1::Cluster::WithRawCallbackMethod_Explain<v1::Cluster::WithRawCallbackMethod_Snapshot<v1::Cluster::Service>>>>>>;

/// Declares the raw override of `Method` that parses `Req`, calls `impl` and serializes `Resp`.
#define FRACPACK_RAW_METHOD(Method, impl, Req, Resp, what)                                                        \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,             \
                                   grpc::ByteBuffer* response) override {                                          \
    return unary<Req, Resp>(                                                                                       \
        ctx, request, response, metrics_, #impl, [this](const Req* in, Resp* out) { return impl(in, out); },      \
        access_, Permission::what);                                                                               \
  }

/// What both services hold: the core they call, the metrics they count in, who may call.
template <class Raw>
class ServiceBase : public Raw {
 public:
  /// `access`: who may call (null: everyone); not owned.
  ServiceBase(Extender& core, Metrics& metrics, const AccessPolicy* access) : core_(core), metrics_(metrics), access_(access) {}

 protected:
  Extender& core_;
  Metrics& metrics_;
  const AccessPolicy* access_;
};

struct FuzzAccess;

class ExtenderService final : public ServiceBase<ExtenderRawService> {
 public:
  using ServiceBase::ServiceBase;

  FRACPACK_RAW_METHOD(Filter, filter, v1::ExtenderArgs, v1::ExtenderFilterResult, kSchedule)
  FRACPACK_RAW_METHOD(Prioritize, prioritize, v1::ExtenderArgs, v1::HostPriorityList, kSchedule)
  FRACPACK_RAW_METHOD(Bind, bind, v1::ExtenderBindingArgs, v1::ExtenderBindingResult, kSchedule)
  FRACPACK_RAW_METHOD(Preempt, preempt, v1::ExtenderPreemptionArgs, v1::ExtenderPreemptionResult, kSchedule)

  /// Following the API server: Bind creates the pod's Binding there too (bind_path.hpp). Not
  /// owned; set before serving.
  void use_binder(KubeBinder* binder) { binder_ = binder; }

  /// The fuzz target (tests/fuzz/fuzz_grpc_requests.cpp) calls the handlers with parsed messages.
  friend struct FuzzAccess;

 private:
  // The handlers, after parsing and the access check.
  grpc::Status filter(const v1::ExtenderArgs* args, v1::ExtenderFilterResult* out);
  grpc::Status prioritize(const v1::ExtenderArgs* args, v1::HostPriorityList* out);
  grpc::Status bind(const v1::ExtenderBindingArgs* args, v1::ExtenderBindingResult* out);
  grpc::Status preempt(const v1::ExtenderPreemptionArgs* args, v1::ExtenderPreemptionResult* out);

  PodCache pods_;
  KubeBinder* binder_ = nullptr;
};

class ClusterService final : public ServiceBase<ClusterRawService> {
 public:
  using ServiceBase::ServiceBase;

  FRACPACK_RAW_METHOD(Apply, apply, v1::ApplyRequest, v1::ApplyResponse, kAdminister)
  FRACPACK_RAW_METHOD(Remove, remove, v1::RemoveRequest, v1::RemoveResponse, kAdminister)
  FRACPACK_RAW_METHOD(Release, release, v1::ReleaseRequest, v1::ReleaseResponse, kAdminister)
  FRACPACK_RAW_METHOD(Sync, sync, v1::SyncRequest, v1::SyncResponse, kAdminister)
  FRACPACK_RAW_METHOD(Explain, explain, v1::ExplainRequest, v1::ExplainResponse, kRead)
  FRACPACK_RAW_METHOD(Snapshot, snapshot, v1::SnapshotRequest, v1::SnapshotResponse, kRead)

  friend struct FuzzAccess;

 private:
  // The handlers, after parsing and the access check.
  grpc::Status apply(const v1::ApplyRequest* req, v1::ApplyResponse* out);
  grpc::Status remove(const v1::RemoveRequest* req, v1::RemoveResponse* out);
  grpc::Status release(const v1::ReleaseRequest* req, v1::ReleaseResponse* out);
  grpc::Status sync(const v1::SyncRequest* req, v1::SyncResponse* out);
  grpc::Status explain(const v1::ExplainRequest* req, v1::ExplainResponse* out);
  grpc::Status snapshot(const v1::SnapshotRequest* req, v1::SnapshotResponse* out);
};

#undef FRACPACK_RAW_METHOD

}  // namespace fracpack::api
