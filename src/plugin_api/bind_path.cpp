#include "plugin_api/bind_path.hpp"

#include <spdlog/spdlog.h>

namespace fracpack::api {

namespace {

/// After the Binding: a failure counted, and undone in the ledger unless the pod may be bound.
Result<BindAnswer> settled(Extender& core, Metrics& metrics, Result<BindAnswer> bound, Status st, bool maybe_bound) {
  if (st.is_ok()) return bound;
  metrics.api_bind_error(st.code());
  if (!maybe_bound) {
    if (Status undone = core.release(bound->pod); !undone.is_ok()) {
      spdlog::error("pod {}: the API server did not bind it and the ledger could not release it: {}", bound->pod, undone.message());
    }
  }
  return st;
}

}  // namespace

Result<BindAnswer> bind_pod(Extender& core, KubeBinder* binder, Metrics& metrics, const std::string& ns, const std::string& name,
                            const std::string& uid, const std::string& node) {
  auto bound = core.bind(ns, name, uid, node);
  if (!bound || binder == nullptr) return bound;
  bool maybe_bound = false;
  Status st = binder->bind(*bound, uid, &maybe_bound);
  return settled(core, metrics, std::move(bound), std::move(st), maybe_bound);
}

void bind_pod_async(Extender& core, KubeBinder* binder, Metrics& metrics, const std::string& ns, const std::string& name,
                    const std::string& uid, const std::string& node, std::function<void(Result<BindAnswer>)> done) {
  auto bound = core.bind(ns, name, uid, node);
  if (!bound || binder == nullptr) return done(std::move(bound));
  const BindAnswer answer = *bound;
  binder->bind_async(answer, uid, [&core, &metrics, answer, done = std::move(done)](Status st, bool maybe_bound) {
    done(settled(core, metrics, answer, std::move(st), maybe_bound));
  });
}

}  // namespace fracpack::api
