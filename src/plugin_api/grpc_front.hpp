// The gRPC front: fracpack.v1.Extender and fracpack.v1.Cluster (proto/fracpack/v1), with the
// standard health service (grpc.health.v1.Health, "" and both service names SERVING) and server
// reflection (grpcurl and grpc_cli can list and call every method without the .proto files).
//
// TLS: with a certificate and key the port speaks TLS; adding a client CA turns on mutual TLS
// (clients must present a certificate signed by it, else the handshake fails). Without them the
// port is plaintext, for a sidecar on localhost or a mesh that terminates TLS.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "fracpack/server/extender.hpp"
#include "plugin_api/front.hpp"
#include "plugin_api/access.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"
#include "plugin_api/tls_files.hpp"

namespace fracpack::api {

struct GrpcOptions {
  std::string address = "127.0.0.1:0";  ///< "host:port"; port 0 picks a free one (tests)
  TlsFiles tls;
  int max_message_bytes = 8 << 20;      ///< larger requests get RESOURCE_EXHAUSTED from gRPC itself
  /// Who may call which method (access.hpp); null: everyone. Health and reflection stay open.
  std::shared_ptr<const AccessPolicy> access;
  // What a connection may hold (gRPC 1.51 has no cap on connections: these bound what each costs).
  std::chrono::milliseconds handshake_timeout{10'000};  ///< TCP accepted → TLS and HTTP/2 settings done
  std::chrono::milliseconds idle_timeout{300'000};      ///< no call for this long: GOAWAY, closed
  std::chrono::milliseconds keepalive_time{120'000};    ///< a ping after this long quiet; a dead peer closed
  int max_concurrent_streams = 128;                     ///< calls in flight on one connection
  /// Following the API server: Bind creates the Binding there, as the JSON front's (not owned).
  KubeBinder* binder = nullptr;
};

class GrpcFront final : public Front {
 public:
  GrpcFront(Extender& core, Metrics& metrics, GrpcOptions options);
  ~GrpcFront() override;
  GrpcFront(const GrpcFront&) = delete;
  GrpcFront& operator=(const GrpcFront&) = delete;

  /// Binds and starts serving on gRPC's own threads. Returns the bound port; kInvalidArgument for
  /// TLS files that check_tls_files() refuses, kInternal when the address cannot be bound.
  Result<int> start() override;
  /// Stops accepting, finishes calls in flight (up to a second), then cancels the rest.
  void stop() override;
  /// grpc.health.v1 for "" and both services: SERVING or NOT_SERVING (not synced with the API server).
  void set_serving(bool serving);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fracpack::api
