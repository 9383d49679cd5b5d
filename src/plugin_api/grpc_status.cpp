#include "plugin_api/grpc_status.hpp"

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace fracpack::api {
namespace {

grpc::StatusCode code_for(Code code) {
  switch (code) {
    case Code::kOk: return grpc::StatusCode::OK;
    case Code::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case Code::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case Code::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Code::kUnschedulable: return grpc::StatusCode::ABORTED;
    case Code::kUnschedulableAndUnresolvable: return grpc::StatusCode::FAILED_PRECONDITION;
    case Code::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case Code::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case Code::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

/// google.rpc.Status{code, message, details: [detail]}, serialized for the trailer.
template <class Detail>
std::string rich_status(grpc::StatusCode code, const std::string& message, const Detail& detail) {
  google::rpc::Status rich;
  rich.set_code(static_cast<int>(code));
  rich.set_message(message);
  rich.add_details()->PackFrom(detail);
  return rich.SerializeAsString();
}

}  // namespace

grpc::Status to_grpc(const Status& status, std::string_view field) {
  const grpc::StatusCode code = code_for(status.code());
  if (status.is_ok()) return grpc::Status::OK;
  if (status.code() == Code::kInvalidArgument) {
    google::rpc::BadRequest bad;
    auto* v = bad.add_field_violations();
    v->set_field(status.subject().empty() ? std::string(field) : status.subject());
    v->set_description(status.message());
    return {code, status.message(), rich_status(code, status.message(), bad)};
  }
  if (status.code() == Code::kResourceExhausted) {
    google::rpc::QuotaFailure quota;
    auto* v = quota.add_violations();
    v->set_subject(status.subject());
    v->set_description(status.message());
    return {code, status.message(), rich_status(code, status.message(), quota)};
  }
  return {code, status.message()};
}

Code from_grpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return Code::kOk;
    case grpc::StatusCode::INVALID_ARGUMENT: return Code::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND: return Code::kNotFound;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Code::kResourceExhausted;
    case grpc::StatusCode::ABORTED: return Code::kUnschedulable;
    case grpc::StatusCode::FAILED_PRECONDITION: return Code::kUnschedulableAndUnresolvable;
    case grpc::StatusCode::ALREADY_EXISTS: return Code::kAlreadyExists;
    default: return Code::kInternal;
  }
}

}  // namespace fracpack::api
