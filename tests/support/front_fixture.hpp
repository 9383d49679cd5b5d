// An in-memory extender core with one front (gRPC or HTTP) listening on a loopback port: what
// the front tests drive, the way a scheduler would.
#pragma once

#include <memory>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::test {

/// An extender core with `:memory:` state and the default policy. (Not in the template below:
/// GCC 12 crashes on `ExtenderOptions{}` inside it, an internal compiler error in check_noexcept_r.)
inline std::unique_ptr<Extender> open_memory_core() {
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  return std::move(*opened);
}

template <class Front, class Options>
struct FrontFixture {
  std::unique_ptr<Extender> core;
  api::Metrics metrics;
  std::unique_ptr<Front> front;
  int port = 0;

  /// Opens the core (`:memory:` state, pack) and starts `Front` with `options` on an ephemeral port.
  explicit FrontFixture(const Options& options) {
    core = open_memory_core();
    front = std::make_unique<Front>(*core, metrics, options);
    auto started = front->start();
    REQUIRE_MESSAGE(started.is_ok(), started.status().message());
    port = *started;
  }
};

}  // namespace fracpack::test
