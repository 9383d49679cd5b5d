// The gRPC services (proto/fracpack/v1): thin, callback-API handlers over the extender core.
// Every method answers through grpc_status.hpp's one mapping and is counted in Metrics under
// front "grpc".
#pragma once

#include "fracpack/extender.hpp"
#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {

class ExtenderService final : public v1::Extender::CallbackService {
 public:
  ExtenderService(Extender& core, Metrics& metrics) : core_(core), metrics_(metrics) {}

  grpc::ServerUnaryReactor* Filter(grpc::CallbackServerContext* ctx, const v1::ExtenderArgs* args,
                                   v1::ExtenderFilterResult* out) override;
  grpc::ServerUnaryReactor* Prioritize(grpc::CallbackServerContext* ctx, const v1::ExtenderArgs* args,
                                       v1::HostPriorityList* out) override;
  grpc::ServerUnaryReactor* Bind(grpc::CallbackServerContext* ctx, const v1::ExtenderBindingArgs* args,
                                 v1::ExtenderBindingResult* out) override;
  grpc::ServerUnaryReactor* Preempt(grpc::CallbackServerContext* ctx, const v1::ExtenderPreemptionArgs* args,
                                    v1::ExtenderPreemptionResult* out) override;

 private:
  Extender& core_;
  Metrics& metrics_;
};

class ClusterService final : public v1::Cluster::CallbackService {
 public:
  ClusterService(Extender& core, Metrics& metrics) : core_(core), metrics_(metrics) {}

  grpc::ServerUnaryReactor* Apply(grpc::CallbackServerContext* ctx, const v1::ApplyRequest* req,
                                  v1::ApplyResponse* out) override;
  grpc::ServerUnaryReactor* Remove(grpc::CallbackServerContext* ctx, const v1::RemoveRequest* req,
                                   v1::RemoveResponse* out) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
                                    v1::ReleaseResponse* out) override;
  grpc::ServerUnaryReactor* Sync(grpc::CallbackServerContext* ctx, const v1::SyncRequest* req,
                                 v1::SyncResponse* out) override;
  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* ctx, const v1::ExplainRequest* req,
                                    v1::ExplainResponse* out) override;
  grpc::ServerUnaryReactor* Snapshot(grpc::CallbackServerContext* ctx, const v1::SnapshotRequest* req,
                                     v1::SnapshotResponse* out) override;

 private:
  Extender& core_;
  Metrics& metrics_;
};

}  // namespace fracpack::api
