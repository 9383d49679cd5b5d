// A client of a running `fracpack serve`, over either front, for `fracpack replay` and the
// extender benchmark. It speaks exactly what kube-scheduler (JSON) or a KAI-side plugin (gRPC)
// would send, so what it measures is what they would see.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fracpack/server/extender.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// ExtenderFilterResult: the candidates that fit (in the order sent) and node → reason for the
/// rest, in the order answered (flat lists: answers name thousands of nodes).
struct FilterReply {
  using Reasons = std::vector<std::pair<std::string, SharedReason>>;  ///< nodes failing alike share their reason
  std::vector<std::string> node_names;
  Reasons failed_nodes;
  Reasons failed_and_unresolvable_nodes;
};

/// HostPriority: kube-scheduler's score 0..10 of one node (the extender core's own type).
using fracpack::HostScore;

class ExtenderClient {
 public:
  virtual ~ExtenderClient() = default;
  /// The server's nodes, in name order (from its snapshot).
  virtual Result<std::vector<std::string>> node_names() = 0;
  /// `pod_json`: a v1 Pod, JSON text. The candidates are sent by name (nodeCacheCapable).
  virtual Result<FilterReply> filter(const std::string& pod_json, const std::vector<std::string>& nodes) = 0;
  /// Filter over every node the server knows (gRPC's all_nodes): the passing nodes best first, at
  /// most `max_nodes` (0: all). kInvalidArgument over JSON: kube-scheduler's wire has no such mode.
  virtual Result<FilterReply> filter_all(const std::string& pod_json, int max_nodes) = 0;
  virtual Result<std::vector<HostScore>> prioritize(const std::string& pod_json, const std::vector<std::string>& nodes) = 0;
  /// A refusal comes back as the core's Status (kUnschedulable when the GPUs were taken since
  /// Filter, kUnschedulableAndUnresolvable over gRPC when the pod can never fit that node,
  /// kResourceExhausted for a queue, ...); a transport failure is kInternal.
  virtual Status bind(const std::string& pod_namespace, const std::string& pod_name, const std::string& pod_uid,
                      const std::string& node) = 0;
};

/// A client's TLS and credentials: a CA to trust (server TLS), a certificate and key for mutual
/// TLS, a bearer token sent with every call (serve --token-file).
struct ClientTls {
  std::string ca;
  std::string cert;
  std::string key;
  std::string token;  ///< "" = none
};

/// "http://host:port" or "https://host:port" → the JSON front; "grpc://host:port" or "host:port"
/// → the gRPC front (TLS when `tls.ca` is set). kInvalidArgument for any other scheme, TLS files
/// for a plaintext http:// server, or unreadable TLS files.
Result<std::unique_ptr<ExtenderClient>> connect(const std::string& server, const ClientTls& tls = {});

/// `tls` applies to an https:// `base_url` (its CA required); the token to either.
Result<std::unique_ptr<ExtenderClient>> connect_http(const std::string& base_url, const ClientTls& tls = {});
Result<std::unique_ptr<ExtenderClient>> connect_grpc(const std::string& address, const ClientTls& tls);

}  // namespace fracpack::api
