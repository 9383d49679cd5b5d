// The one place where fracpack's Status becomes a gRPC status (the table is in
// proto/fracpack/v1/extender.proto). Rich details travel as a google.rpc.Status in the
// grpc-status-details-bin trailer, the way every gRPC language's rich-error helpers read them.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// kInvalidArgument → INVALID_ARGUMENT with a google.rpc.BadRequest naming `field` (the request
/// field the bad value came in; the Status's own subject wins when set); kResourceExhausted →
/// RESOURCE_EXHAUSTED with a google.rpc.QuotaFailure whose subject is the Status's subject;
/// kUnschedulableAndUnresolvable and kFailedPrecondition → FAILED_PRECONDITION with a
/// google.rpc.PreconditionFailure whose type is the code's name ("UnschedulableAndUnresolvable",
/// "FailedPrecondition"); kNotFound → NOT_FOUND; kUnschedulable → ABORTED; kAlreadyExists →
/// ALREADY_EXISTS; kUnavailable → UNAVAILABLE (retry: gRPC's own code for a server that cannot
/// answer now); kInternal → INTERNAL; kOk → OK. The message is cut to 1,024 characters.
grpc::Status to_grpc(const Status& status, std::string_view field = {});

/// The fracpack Code a gRPC status code stands for. FAILED_PRECONDITION alone is
/// kFailedPrecondition: the code does not say whether the pod can never fit (see the overload).
Code from_grpc(grpc::StatusCode code);

/// The inverse of to_grpc, for clients: from_grpc(code), except that a FAILED_PRECONDITION whose
/// PreconditionFailure says "UnschedulableAndUnresolvable" is kUnschedulableAndUnresolvable (a
/// Bind that can never succeed on that node: pick another, do not retry).
Code from_grpc(const grpc::Status& status);

}  // namespace fracpack::api
