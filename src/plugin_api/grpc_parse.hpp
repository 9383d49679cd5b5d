// A request that is not valid protobuf is the caller's error: INVALID_ARGUMENT, not INTERNAL.
//
// gRPC's stock SerializationTraits for protobuf messages (grpcpp/impl/codegen/proto_utils.h) answer
// a request that does not parse with INTERNAL ("server bug"). fracpack's request types get an
// explicit specialization that says INVALID_ARGUMENT and names the message type instead. It must be
// seen before any use of the stubs, so CMake force-includes this header (-include) into every
// translation unit of fracpack_proto and its users; the messages are only declared here.
#pragma once

#include <string>

#include <grpcpp/impl/codegen/proto_utils.h>

namespace fracpack::v1 {
class ExtenderArgs;
class ExtenderBindingArgs;
class ExtenderPreemptionArgs;
class ApplyRequest;
class RemoveRequest;
class ReleaseRequest;
class SyncRequest;
class ExplainRequest;
class SnapshotRequest;
}  // namespace fracpack::v1

namespace fracpack::api {

template <class T>
class RequestSerializationTraits {
 public:
  static grpc::Status Serialize(const grpc::protobuf::MessageLite& msg, grpc::ByteBuffer* bb, bool* own_buffer) {
    return grpc::GenericSerialize<grpc::ProtoBufferWriter, T>(msg, bb, own_buffer);
  }
  static grpc::Status Deserialize(grpc::ByteBuffer* buffer, grpc::protobuf::MessageLite* msg) {
    grpc::Status parsed = grpc::GenericDeserialize<grpc::ProtoBufferReader, T>(buffer, msg);
    if (parsed.ok() || parsed.error_code() != grpc::StatusCode::INTERNAL) return parsed;
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "the request is not a valid " + std::string(T::descriptor()->full_name()) + " protobuf message"};
  }
};

}  // namespace fracpack::api

#define FRACPACK_REQUEST_TRAITS(T) \
  template <>                      \
  class grpc::SerializationTraits<T, void> : public fracpack::api::RequestSerializationTraits<T> {}

FRACPACK_REQUEST_TRAITS(fracpack::v1::ExtenderArgs);
FRACPACK_REQUEST_TRAITS(fracpack::v1::ExtenderBindingArgs);
FRACPACK_REQUEST_TRAITS(fracpack::v1::ExtenderPreemptionArgs);
FRACPACK_REQUEST_TRAITS(fracpack::v1::ApplyRequest);
FRACPACK_REQUEST_TRAITS(fracpack::v1::RemoveRequest);
FRACPACK_REQUEST_TRAITS(fracpack::v1::ReleaseRequest);
FRACPACK_REQUEST_TRAITS(fracpack::v1::SyncRequest);
FRACPACK_REQUEST_TRAITS(fracpack::v1::ExplainRequest);
FRACPACK_REQUEST_TRAITS(fracpack::v1::SnapshotRequest);

#undef FRACPACK_REQUEST_TRAITS
