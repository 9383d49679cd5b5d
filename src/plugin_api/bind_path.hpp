// Bind as both fronts answer it (kube-scheduler's bindVerb over JSON, fracpack.v1.Extender/Bind
// over gRPC): the ledger's bind, then, following the API server, the pod's Binding there.
// Internal to src/plugin_api/.
#pragma once

#include <functional>
#include <string>

#include "fracpack/server/extender.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {

/// core.bind(ns, name, uid, node), then with `binder` (serve --kube-api) the Binding in the API
/// server (KubeBinder::bind). A definite failure there (the pod is gone or bound elsewhere, the
/// API server unreachable) undoes the ledger's bind; an unknown outcome (sent, no clear answer)
/// keeps it, as the pod may be bound: its GPUs stay held until the retried pod binds there, or a
/// Sync or a release says otherwise. Every failure there counts in
/// fracpack_api_bind_errors_total. Blocks until the API server answers (KubeBinder's timeouts).
Result<BindAnswer> bind_pod(Extender& core, KubeBinder* binder, Metrics& metrics, const std::string& ns, const std::string& name,
                            const std::string& uid, const std::string& node);
/// bind_pod() without waiting: `done` gets the outcome, from this call or later from the binder's
/// threads (KubeBinder::bind_async: a Bind waiting for a reservation pod holds no thread).
void bind_pod_async(Extender& core, KubeBinder* binder, Metrics& metrics, const std::string& ns, const std::string& name,
                    const std::string& uid, const std::string& node, std::function<void(Result<BindAnswer>)> done);

}  // namespace fracpack::api
