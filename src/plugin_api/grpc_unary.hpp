// The shape every unary handler shares: parse the raw request, run the body, serialize the
// answer, finish with the body's status, count it.
#pragma once

#include <exception>
#include <string>

#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "plugin_api/access.hpp"
#include "plugin_api/certificate_name.hpp"
#include "plugin_api/grpc_status.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {

/// Arena blocks for one call: 64 KiB first (a Filter of 5,000 names fits in a few), up to 1 MiB.
inline google::protobuf::ArenaOptions arena_options() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 1 << 20;
  return options;
}

/// The caller's verified certificate name (mutual TLS), "" without one: read from the peer's
/// certificate as the JSON front reads it (certificate_name.hpp), not from gRPC's own CN property,
/// which takes the first of several.
inline std::string certificate_name(const grpc::CallbackServerContext& ctx) {
  const auto auth = ctx.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return "";
  const auto pem = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  return pem.empty() ? "" : certificate_name_of_pem({pem.front().data(), pem.front().size()});
}

/// OK, or UNAUTHENTICATED / PERMISSION_DENIED when the caller may not `what` (access.hpp).
inline grpc::Status authorize(const grpc::CallbackServerContext& ctx, const AccessPolicy* access, Permission what, const char* verb) {
  if (access == nullptr || !access->enabled()) return grpc::Status::OK;
  std::string_view authorization;
  const auto& metadata = ctx.client_metadata();
  if (metadata.count("authorization") > 1) {
    return {grpc::StatusCode::UNAUTHENTICATED, fmt::format("{}: two authorization values: send one bearer token", verb)};
  }
  if (auto it = metadata.find("authorization"); it != metadata.end()) authorization = {it->second.data(), it->second.size()};
  const AccessDecision d = access->check(certificate_name(ctx), authorization, what, verb);
  if (d.allowed()) return grpc::Status::OK;
  spdlog::warn("grpc {} from {}: refused: {}", verb, ctx.peer(), d.message);
  return {d.outcome == AccessDecision::Outcome::kUnauthenticated ? grpc::StatusCode::UNAUTHENTICATED : grpc::StatusCode::PERMISSION_DENIED,
          d.message};
}

/// Refuses a caller `access` does not allow `what`; parses `request` as `Req` (bytes that are not
/// one are INVALID_ARGUMENT naming the type); runs `body(const Req*, Resp*)` → grpc::Status on
/// gRPC's callback thread. An exception is a fracpack bug, not the caller's: INTERNAL, logged.
template <class Req, class Resp, class Body>
grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                grpc::ByteBuffer* response, Metrics& metrics, const char* verb, Body&& body,
                                const AccessPolicy* access, Permission what) {
  Timer timer;
  grpc::Status status = authorize(*ctx, access, what, verb);
  if (!status.ok()) {
    metrics.observe("grpc", verb, grpc_code_name(static_cast<int>(status.error_code())), timer.seconds());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  // Request and answer live on one arena: a Filter names thousands of nodes, and one arena block
  // instead of a heap allocation per name is most of the difference at 5,000 nodes.
  google::protobuf::Arena arena(arena_options());
  Req& req = *google::protobuf::Arena::CreateMessage<Req>(&arena);
  grpc::ByteBuffer bytes(*request);  // shares the slices; the reader consumes its copy
  grpc::ProtoBufferReader reader(&bytes);
  if (!reader.status().ok() || !req.ParseFromZeroCopyStream(&reader)) {
    status = to_grpc({Code::kInvalidArgument,
                      "the request is not a valid " + std::string(Req::descriptor()->full_name()) + " protobuf message",
                      "request"});
  } else {
    Resp& resp = *google::protobuf::Arena::CreateMessage<Resp>(&arena);
    try {
      status = body(&req, &resp);
    } catch (const std::exception& e) {
      spdlog::error("grpc {}: {}", verb, e.what());
      status = grpc::Status(grpc::StatusCode::INTERNAL, std::string(verb) + ": " + e.what());
    }
    bool own_buffer = false;
    if (status.ok()) status = grpc::SerializationTraits<Resp>::Serialize(resp, response, &own_buffer);
  }
  metrics.observe("grpc", verb, grpc_code_name(static_cast<int>(status.error_code())), timer.seconds());
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace fracpack::api
