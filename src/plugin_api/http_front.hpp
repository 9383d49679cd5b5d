// kube-scheduler's HTTP extender front (k8s.io/kube-scheduler/extender/v1, docs/kube-scheduler.md
// rules 1–7):
// POST /filter, /prioritize, /bind, /preempt with Go's capitalised field names, both
// nodeCacheCapable modes, plus GET /healthz, /metrics (Prometheus text) and /snapshot (the ledger
// as JSON), and fracpack's POST /explain ({"Pod": ...} → {"Status", "Reason": "0/N nodes are
// available: ...", "Nodes": {node: reasons with that node's numbers}, "NodesOmitted"}). Thin: JSON
// in, the core, JSON out.
//
// Status codes: 200 for every answer, infeasible pods included (their nodes go to FailedNodes or
// FailedAndUnresolvableNodes, never Error); 400 for a body that is not the verb's ExtenderArgs
// (bad JSON, wrong types, a missing Pod) or a request whose framing is unsafe; 413 for a body
// above the size limit (after decompression); 415 for a Content-Encoding other than gzip or
// deflate; 431 for an oversized header; 404 for an unknown path. Every refusal carries Error.
// A Bind or Preempt the core refuses is 200 with Error set, as kube-scheduler expects.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "fracpack/server/extender.hpp"
#include "plugin_api/front.hpp"
#include "plugin_api/access.hpp"
#include "plugin_api/http_server.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {

struct HttpOptions {
  /// kube-scheduler before v1.21 ignores FailedAndUnresolvableNodes (the pod's event then reads
  /// "0/N nodes are available: ."): list those nodes in FailedNodes instead.
  bool unresolvable_as_failed = false;
  /// The listener: address, limits, deadlines, TLS (http_server.hpp). Its `gzip` compresses JSON
  /// answers for callers that accept it. kube-scheduler (Go's HTTP client) always does; an
  /// extender beside the scheduler gains nothing from it, and compressing a Filter answer for
  /// 5,000 nodes (~200 KB) costs about as much CPU as computing it.
  HttpServerOptions listen;
  /// Serve only GET /healthz, /readyz and /metrics (serve --health: a probe listener), to anyone.
  bool probes_only = false;
  /// Who may call which verb (access.hpp); null: everyone. /healthz and /readyz are always open;
  /// /metrics needs kRead here (it is open on a probes_only listener).
  std::shared_ptr<const AccessPolicy> access;
  /// With --kube-api: the ledger against the API server's pods (ClusterWatch::verify_api), which
  /// /debug/verify asks after its rebuild from scratch. Empty: the rebuild alone.
  std::function<std::vector<std::string>()> verify_api;
};

class HttpFront final : public Front {
 public:
  /// `binder`: set for kube-scheduler's bindVerb; Bind then also creates the pod's Binding in the
  /// API server (a definite refusal there undoes the ledger's bind). Not owned.
  HttpFront(Extender& core, Metrics& metrics, HttpOptions options, KubeBinder* binder = nullptr);
  ~HttpFront() override;
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  /// Binds and starts serving in the background. Returns the bound port, or kInternal.
  Result<int> start() override;
  /// Stops accepting and waits for the serving thread.
  void stop() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fracpack::api
