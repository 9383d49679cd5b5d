#include "plugin_api/grpc_status.hpp"

#include "fracpack/core/quoting.hpp"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace fracpack::api {
namespace {

/// A message travels in the grpc-message header (8 KiB of metadata by default, percent-encoded):
/// every site bounds what it quotes (excerpt()); this bounds the whole, whatever a site missed.
constexpr std::size_t kMessageChars = 1024;

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
    case Code::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
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

/// The detail for a status of `code`, packed with `message`; "" for codes sent without one.
std::string details_for(const Status& status, grpc::StatusCode code, const std::string& message, std::string_view field) {
  const std::string subject = status.subject().empty() ? std::string(field) : status.subject();
  switch (status.code()) {
    case Code::kInvalidArgument: {
      google::rpc::BadRequest bad;
      auto* v = bad.add_field_violations();
      v->set_field(subject);
      v->set_description(message);
      return rich_status(code, message, bad);
    }
    case Code::kResourceExhausted: {
      google::rpc::QuotaFailure quota;
      auto* v = quota.add_violations();
      v->set_subject(status.subject());
      v->set_description(message);
      return rich_status(code, message, quota);
    }
    case Code::kUnschedulableAndUnresolvable:
    case Code::kFailedPrecondition: {
      google::rpc::PreconditionFailure failure;
      auto* v = failure.add_violations();
      v->set_type(std::string(code_name(status.code())));
      v->set_subject(subject);
      v->set_description(message);
      return rich_status(code, message, failure);
    }
    default: return {};
  }
}

}  // namespace

grpc::Status to_grpc(const Status& status, std::string_view field) {
  if (status.is_ok()) return grpc::Status::OK;
  const grpc::StatusCode code = code_for(status.code());
  const std::string message = excerpt(status.message(), kMessageChars);
  std::string details = details_for(status, code, message, field);
  if (details.empty()) return {code, message};
  return {code, message, std::move(details)};
}

Code from_grpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return Code::kOk;
    case grpc::StatusCode::INVALID_ARGUMENT: return Code::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND: return Code::kNotFound;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Code::kResourceExhausted;
    case grpc::StatusCode::ABORTED: return Code::kUnschedulable;
    case grpc::StatusCode::FAILED_PRECONDITION: return Code::kFailedPrecondition;
    case grpc::StatusCode::ALREADY_EXISTS: return Code::kAlreadyExists;
    case grpc::StatusCode::UNAVAILABLE: return Code::kUnavailable;
    default: return Code::kInternal;
  }
}

Code from_grpc(const grpc::Status& status) {
  const Code code = from_grpc(status.error_code());
  if (code != Code::kFailedPrecondition) return code;
  google::rpc::Status rich;
  google::rpc::PreconditionFailure failure;
  if (!rich.ParseFromString(status.error_details())) return code;
  for (const auto& any : rich.details()) {
    if (!any.UnpackTo(&failure)) continue;
    for (const auto& v : failure.violations()) {
      if (v.type() == code_name(Code::kUnschedulableAndUnresolvable)) return Code::kUnschedulableAndUnresolvable;
    }
  }
  return code;
}

}  // namespace fracpack::api
