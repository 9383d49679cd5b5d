// Where the Kubernetes API server is, how to authenticate to it, and HTTP connections to it.
//
// `--kube-api URL` names it (https://kubernetes.default.svc, or kubectl proxy's
// http://127.0.0.1:8001); `--kube-api in-cluster` reads what a pod is given: the address from
// KUBERNETES_SERVICE_HOST/PORT, the service account's token and CA from
// /var/run/secrets/kubernetes.io/serviceaccount/ (client-go's rest.InClusterConfig). The token file
// is read again every minute: bound service-account tokens are rotated by the kubelet.
// Every connection sends with TCP_NODELAY: a Binding POST otherwise waited ~40 ms for the ACK of
// its header segment (Nagle's algorithm), where kube-scheduler's own binder takes 0.08 ms.
// Internal to src/plugin_api/.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "fracpack/core/status.hpp"

namespace httplib {
class Client;
}

namespace fracpack::api {

struct KubeApi {
  std::string url;         ///< "https://host[:port]" or "http://host[:port]", or "in-cluster"
  std::string token_file;  ///< bearer token ("" = none)
  std::string ca_file;     ///< PEM CA of the API server's certificate ("" = the system's)
};

class KubeConnection {
 public:
  /// Checks the URL (http(s)://host[:port], no path, credentials or query) and the files;
  /// resolves "in-cluster". kInvalidArgument naming the flag otherwise.
  static Result<std::shared_ptr<KubeConnection>> open(KubeApi api);
  /// A new client for one connection: keep-alive, TCP_NODELAY, the CA and current token set.
  /// `read_timeout`: how long a read may wait (a watch waits for the next event).
  [[nodiscard]] std::unique_ptr<httplib::Client> client(std::chrono::seconds read_timeout = std::chrono::seconds(10));
  [[nodiscard]] const std::string& url() const { return api_.url; }

 private:
  explicit KubeConnection(KubeApi api, std::string token) : api_(std::move(api)), token_(std::move(token)) {}
  std::string token();  ///< the token, read again when a minute old
  KubeApi api_;
  std::mutex mu_;
  std::string token_;
  std::chrono::steady_clock::time_point token_read_ = std::chrono::steady_clock::now();
};

/// kInvalidArgument unless `url` is http(s)://host[:port] with a port in 1..65535.
Status check_api_url(const std::string& url);

}  // namespace fracpack::api
