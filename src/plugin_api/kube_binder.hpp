// Binds pods in the Kubernetes API server, for kube-scheduler's bindVerb.
//
// With `bindVerb` set, kube-scheduler leaves binding to the extender: fracpack's Bind must create
// the pod's Binding (POST /api/v1/namespaces/<ns>/pods/<name>/binding, what kube-scheduler's own
// DefaultBinder sends). The Binding carries the GPU annotations fracpack decided
// (nvidia.com/container.<ctr>.gpus.devices, .gpu-compute.portion); the API server copies a
// Binding's annotations onto the pod as it sets spec.nodeName (pkg/registry/core/pod/storage,
// setPodHostAndAnnotations), so the pod is bound and annotated in one call.
#pragma once

#include <memory>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "fracpack/extender.hpp"
#include "fracpack/status.hpp"
#include "plugin_api/kube_api.hpp"

namespace httplib {
class Client;
}

namespace fracpack::api {

class KubeBinder {
 public:
  /// kInvalidArgument when the URL is not http(s)://host[:port] or a file cannot be read.
  static Result<std::unique_ptr<KubeBinder>> open(const KubeApi& api);
  explicit KubeBinder(std::shared_ptr<KubeConnection> connection);
  ~KubeBinder();

  /// Creates the Binding of `answer.pod` ("namespace/name", UID `uid` when known: the API server
  /// then refuses a different pod of the same name) to `answer.node` with `answer.annotations`.
  /// A pod already bound to that node is success (a retried Bind). kNotFound when the pod is
  /// gone, kAlreadyExists when it is bound elsewhere, kInvalidArgument for a name that is not a
  /// Kubernetes name, kInternal for any other failure; each message names the pod and quotes the
  /// API server. `*maybe_bound`: on failure, whether the API server may have bound the pod anyway
  /// (the request was sent and no clear answer came back).
  Status bind(const BindAnswer& answer, const std::string& uid, bool* maybe_bound);

 private:
  struct Idle {
    std::unique_ptr<httplib::Client> client;
    std::chrono::steady_clock::time_point made;  ///< its bearer token is the one read then
  };
  Idle client();  ///< a pooled connection, or a new one
  void give_back(Idle client);
  std::shared_ptr<KubeConnection> connection_;
  std::mutex mu_;
  std::vector<Idle> idle_;  ///< kube-scheduler binds in parallel
};

}  // namespace fracpack::api
