#include "plugin_api/grpc_front.hpp"

#include <chrono>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "plugin_api/flag_files.hpp"
#include "plugin_api/grpc_services.hpp"

namespace fracpack::api {

namespace {

Result<std::shared_ptr<grpc::ServerCredentials>> credentials(const TlsFiles& tls) {
  if (tls.cert.empty() && tls.key.empty() && tls.client_ca.empty()) return grpc::InsecureServerCredentials();
  // gRPC would only fail to listen ("bad address, or the port is in use"): say what is wrong.
  if (Status st = check_tls_files(tls); !st.is_ok()) return st;
  auto cert = read_pem(tls.cert, "--tls-cert");
  if (!cert) return cert.status();
  auto key = read_pem(tls.key, "--tls-key");
  if (!key) return key.status();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.client_ca.empty()) {
    auto ca = read_pem(tls.client_ca, "--tls-client-ca");
    if (!ca) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = tls.client_certificate_optional ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
                                                                     : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

struct GrpcFront::Impl {
  Impl(Extender& core, Metrics& metrics, GrpcOptions opts)
      : options(std::move(opts)), extender(core, metrics, options.access.get()), cluster(core, metrics, options.access.get()) {
    extender.use_binder(options.binder);
  }
  GrpcOptions options;
  ExtenderService extender;
  ClusterService cluster;
  std::unique_ptr<grpc::Server> server;
};

GrpcFront::GrpcFront(Extender& core, Metrics& metrics, GrpcOptions options)
    : impl_(std::make_unique<Impl>(core, metrics, std::move(options))) {}

GrpcFront::~GrpcFront() { stop(); }

Result<int> GrpcFront::start() {
  auto creds = credentials(impl_->options.tls);
  if (!creds) return creds.status();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(impl_->options.address, *creds, &port);
  builder.SetMaxReceiveMessageSize(impl_->options.max_message_bytes);
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would then start and
  // silently take half the calls. One server per port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A caller that connects and says nothing, or stays connected without calling, is closed.
  const auto& o = impl_->options;
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, static_cast<int>(o.handshake_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(o.idle_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(o.keepalive_time.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams);
  builder.RegisterService(&impl_->extender);
  builder.RegisterService(&impl_->cluster);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0) {
    impl_->server.reset();
    return Status(Code::kInternal, fmt::format("--grpc {}: cannot listen there (bad address, or the port is in use)",
                                               impl_->options.address));
  }
  // gRPC registers "" as SERVING; name both services too, as health-probing clients ask by name.
  auto* health = impl_->server->GetHealthCheckService();
  health->SetServingStatus(v1::Extender::service_full_name(), true);
  health->SetServingStatus(v1::Cluster::service_full_name(), true);
  return port;
}

void GrpcFront::set_serving(bool serving) {
  if (!impl_->server) return;
  auto* health = impl_->server->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(v1::Extender::service_full_name(), serving);
  health->SetServingStatus(v1::Cluster::service_full_name(), serving);
}

void GrpcFront::stop() {
  if (!impl_->server) return;
  impl_->server->GetHealthCheckService()->SetServingStatus(false);
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  impl_->server.reset();
}

}  // namespace fracpack::api
