// A listener that serves the extender core: the gRPC front, the JSON front, or the probe
// listener. serve starts each on its flag's address and stops them in order on SIGTERM.
#pragma once

#include "fracpack/core/status.hpp"

namespace fracpack::api {

class Front {
 public:
  virtual ~Front() = default;
  /// Binds and starts serving in the background; the bound port, or why it cannot listen.
  virtual Result<int> start() = 0;
  /// Stops accepting and finishes (or cancels) the calls in flight; returns when it is quiet.
  virtual void stop() = 0;
};

}  // namespace fracpack::api
