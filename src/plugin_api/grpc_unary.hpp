// The shape every unary handler shares: run the body, finish with its status, count it.
#pragma once

#include <exception>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "plugin_api/metrics.hpp"

namespace fracpack::api {

/// Runs `body` (→ grpc::Status) on the callback thread and finishes the call with what it returns.
/// An exception is a fracpack bug, not the caller's: INTERNAL, logged.
template <class Body>
grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, Metrics& metrics, const char* verb, Body&& body) {
  Timer timer;
  grpc::Status status;
  try {
    status = body();
  } catch (const std::exception& e) {
    spdlog::error("grpc {}: {}", verb, e.what());
    status = grpc::Status(grpc::StatusCode::INTERNAL, std::string(verb) + ": " + e.what());
  }
  metrics.observe("grpc", verb, static_cast<int>(status.error_code()), timer.seconds());
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace fracpack::api
