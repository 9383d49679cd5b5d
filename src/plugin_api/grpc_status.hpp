// The one place where fracpack's Status becomes a gRPC status (the table is in
// proto/fracpack/v1/extender.proto). Rich details travel as a google.rpc.Status in the
// grpc-status-details-bin trailer, the way every gRPC language's rich-error helpers read them.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "fracpack/status.hpp"

namespace fracpack::api {

/// kInvalidArgument → INVALID_ARGUMENT with a google.rpc.BadRequest naming `field` (the request
/// field the bad value came in; the Status's own subject wins when set); kResourceExhausted →
/// RESOURCE_EXHAUSTED with a google.rpc.QuotaFailure whose subject is the Status's subject;
/// kNotFound → NOT_FOUND; kUnschedulable → ABORTED; kUnschedulableAndUnresolvable →
/// FAILED_PRECONDITION; kAlreadyExists → ALREADY_EXISTS; kInternal → INTERNAL; kOk → OK.
grpc::Status to_grpc(const Status& status, std::string_view field = {});

/// The fracpack Code a gRPC status code stands for (the inverse of to_grpc, for clients).
Code from_grpc(grpc::StatusCode code);

}  // namespace fracpack::api
