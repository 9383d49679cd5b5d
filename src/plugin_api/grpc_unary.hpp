// The shape every unary handler shares: parse the raw request, run the body, serialize the
// answer, finish with the body's status, count it.
#pragma once

#include <exception>
#include <string>

#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

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

/// Parses `request` as `Req`; bytes that are not one are INVALID_ARGUMENT naming the type. Runs
/// `body(const Req*, Resp*)` → grpc::Status on gRPC's callback thread; an exception is a fracpack
/// bug, not the caller's: INTERNAL, logged.
template <class Req, class Resp, class Body>
grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                grpc::ByteBuffer* response, Metrics& metrics, const char* verb, Body&& body) {
  Timer timer;
  grpc::Status status;
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
  metrics.observe("grpc", verb, static_cast<int>(status.error_code()), timer.seconds());
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace fracpack::api
