// ExtenderClient over fracpack.v1 gRPC.
#include <grpcpp/grpcpp.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/client.hpp"
#include "plugin_api/flag_files.hpp"
#include "plugin_api/grpc_front.hpp"
#include "plugin_api/grpc_status.hpp"
#include "plugin_api/grpc_unary.hpp"

namespace fracpack::api {
namespace {

Status from_status(const grpc::Status& status, const char* verb) {
  if (status.ok()) return Status::ok();
  const Code code = from_grpc(status);
  if (code == Code::kInternal) {
    return {Code::kInternal, fmt::format("{}: gRPC {} {}", verb, static_cast<int>(status.error_code()), status.error_message())};
  }
  return {code, status.error_message()};
}

void fill(v1::ExtenderArgs& args, const std::string& pod_json, const std::vector<std::string>& nodes) {
  args.set_pod(pod_json);
  args.mutable_node_names()->Reserve(static_cast<int>(nodes.size()));
  for (const auto& n : nodes) args.add_node_names(n);
}

class GrpcClient final : public ExtenderClient {
 public:
  GrpcClient(const std::shared_ptr<grpc::Channel>& channel, std::string token)
      : extender_(v1::Extender::NewStub(channel)), cluster_(v1::Cluster::NewStub(channel)), token_(std::move(token)) {}

  Result<std::vector<std::string>> node_names() override {
    grpc::ClientContext ctx;
    authorize(ctx);
    v1::SnapshotResponse snapshot;
    if (auto st = from_status(cluster_->Snapshot(&ctx, v1::SnapshotRequest(), &snapshot), "Snapshot"); !st.is_ok()) return st;
    std::vector<std::string> names;
    for (const auto& n : snapshot.nodes()) names.push_back(n.name());
    return names;
  }

  Result<FilterReply> filter(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    return call_filter([&](v1::ExtenderArgs& args) { fill(args, pod_json, nodes); });
  }

  Result<FilterReply> filter_all(const std::string& pod_json, int max_nodes) override {
    return call_filter([&](v1::ExtenderArgs& args) {
      args.set_pod(pod_json);
      args.set_all_nodes(true);
      args.set_max_nodes(max_nodes);
    });
  }

  Result<std::vector<HostScore>> prioritize(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    google::protobuf::Arena arena(arena_options());
    auto& args = *google::protobuf::Arena::CreateMessage<v1::ExtenderArgs>(&arena);
    fill(args, pod_json, nodes);
    auto& result = *google::protobuf::Arena::CreateMessage<v1::HostPriorityList>(&arena);
    grpc::ClientContext ctx;
    authorize(ctx);
    if (auto st = from_status(extender_->Prioritize(&ctx, args, &result), "Prioritize"); !st.is_ok()) return st;
    std::vector<HostScore> scores;
    scores.reserve(static_cast<std::size_t>(result.host_priorities_size()));
    for (const auto& hp : result.host_priorities()) scores.push_back({hp.host(), hp.score()});
    return scores;
  }

  Status bind(const std::string& pod_namespace, const std::string& pod_name, const std::string& pod_uid,
              const std::string& node) override {
    v1::ExtenderBindingArgs args;
    args.set_pod_namespace(pod_namespace);
    args.set_pod_name(pod_name);
    args.set_pod_uid(pod_uid);
    args.set_node(node);
    v1::ExtenderBindingResult result;
    grpc::ClientContext ctx;
    authorize(ctx);
    return from_status(extender_->Bind(&ctx, args, &result), "Bind");
  }

 private:
  template <class Fill>
  Result<FilterReply> call_filter(Fill&& fill_args) {
    google::protobuf::Arena arena(arena_options());
    auto& args = *google::protobuf::Arena::CreateMessage<v1::ExtenderArgs>(&arena);
    fill_args(args);
    auto& result = *google::protobuf::Arena::CreateMessage<v1::ExtenderFilterResult>(&arena);
    grpc::ClientContext ctx;
    authorize(ctx);
    if (auto st = from_status(extender_->Filter(&ctx, args, &result), "Filter"); !st.is_ok()) return st;
    FilterReply reply;
    reply.node_names.assign(result.node_names().begin(), result.node_names().end());
    reply.failed_nodes.assign(result.failed_nodes().begin(), result.failed_nodes().end());
    reply.failed_and_unresolvable_nodes.assign(result.failed_and_unresolvable_nodes().begin(),
                                               result.failed_and_unresolvable_nodes().end());
    return reply;
  }

  /// The bearer token, as metadata (gRPC's call credentials refuse plaintext channels).
  void authorize(grpc::ClientContext& ctx) const {
    if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
  }

  std::unique_ptr<v1::Extender::Stub> extender_;
  std::unique_ptr<v1::Cluster::Stub> cluster_;
  std::string token_;
};

}  // namespace

Result<std::unique_ptr<ExtenderClient>> connect_grpc(const std::string& address, const ClientTls& tls) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!tls.ca.empty() || !tls.cert.empty() || !tls.key.empty()) {
    if (tls.ca.empty()) return invalid_argument("--tls-ca: needed to trust the server's certificate");
    if (tls.cert.empty() != tls.key.empty()) return invalid_argument("mutual TLS needs both --tls-cert and --tls-key");
    grpc::SslCredentialsOptions ssl;
    auto ca = read_pem(tls.ca, "--tls-ca");
    if (!ca) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!tls.cert.empty()) {
      auto cert = read_pem(tls.cert, "--tls-cert");
      if (!cert) return cert.status();
      auto key = read_pem(tls.key, "--tls-key");
      if (!key) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);  // a Snapshot of a large cluster
  std::unique_ptr<ExtenderClient> client = std::make_unique<GrpcClient>(grpc::CreateCustomChannel(address, creds, args), tls.token);
  return client;
}

}  // namespace fracpack::api
