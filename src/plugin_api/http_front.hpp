// kube-scheduler's HTTP extender front (k8s.io/kube-scheduler/extender/v1, domain.md §5):
// POST /filter, /prioritize, /bind, /preempt with Go's capitalised field names, both
// nodeCacheCapable modes, plus GET /healthz, /metrics (Prometheus text) and /snapshot (the ledger
// as JSON), and fracpack's POST /explain ({"Pod": ...} → {"Status", "Reason": "0/N nodes are
// available: ...", "Nodes": {node: reasons with that node's numbers}, "NodesOmitted"}). Thin: JSON
// in, the core, JSON out.
//
// Status codes: 200 for every answer, infeasible pods included (their nodes go to FailedNodes or
// FailedAndUnresolvableNodes, never Error); 400 for a body that is not the verb's ExtenderArgs
// (bad JSON, wrong types, a missing Pod); 413 for a body above the size limit; 404 for an unknown
// path. A Bind or Preempt the core refuses is 200 with Error set, as kube-scheduler expects.
#pragma once

#include <memory>
#include <string>

#include "fracpack/extender.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {

struct HttpOptions {
  /// kube-scheduler before v1.21 ignores FailedAndUnresolvableNodes (the pod's event then reads
  /// "0/N nodes are available: ."): list those nodes in FailedNodes instead.
  bool unresolvable_as_failed = false;
  std::string host = "127.0.0.1";
  int port = 0;                        ///< 0: any free port (tests)
  std::size_t max_body = 8u << 20;     ///< bytes; larger bodies get 413
  int threads = 64;  ///< connections served at once; a few slow clients must not starve kube-scheduler
  std::size_t keep_alive_requests = 100'000;  ///< requests served on one connection before it is closed
  /// gzip JSON answers when the request accepts it. kube-scheduler (Go's HTTP client) always
  /// does; an extender beside the scheduler gains nothing from it, and compressing a Filter
  /// answer for 5,000 nodes (~200 KB) costs about as much CPU as computing it.
  bool gzip = false;
};

class HttpFront {
 public:
  /// `binder`: set for kube-scheduler's bindVerb; Bind then also creates the pod's Binding in the
  /// API server (a definite refusal there undoes the ledger's bind). Not owned.
  HttpFront(Extender& core, Metrics& metrics, HttpOptions options, KubeBinder* binder = nullptr);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  /// Binds and starts serving in the background. Returns the bound port, or kInternal.
  Result<int> start();
  /// Stops accepting and waits for the serving thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fracpack::api
