#include "plugin_api/bind_path.hpp"

#include <spdlog/spdlog.h>

namespace fracpack::api {

Result<BindAnswer> bind_pod(Extender& core, KubeBinder* binder, Metrics& metrics, const std::string& ns, const std::string& name,
                            const std::string& uid, const std::string& node) {
  auto bound = core.bind(ns, name, uid, node);
  if (!bound || binder == nullptr) return bound;
  bool maybe_bound = false;
  Status st = binder->bind(*bound, uid, &maybe_bound);
  if (st.is_ok()) return bound;
  metrics.api_bind_error(st.code());
  if (!maybe_bound) {
    if (Status undone = core.release(bound->pod); !undone.is_ok()) {
      spdlog::error("pod {}: the API server did not bind it and the ledger could not release it: {}", bound->pod, undone.message());
    }
  }
  return st;
}

}  // namespace fracpack::api
