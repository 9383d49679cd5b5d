// One error model for the whole library.
//
// Codes follow kube-scheduler's framework Status (pkg/scheduler/framework/interface.go):
//   Unschedulable                 the pod does not fit now; preemption or waiting may help.
//   UnschedulableAndUnresolvable  the pod can never fit this node (no GPUs, wrong sharing kind, ...).
// plus the errors of a service boundary:
//   InvalidArgument  bad input (a malformed pod, node or annotation); the message names the object,
//                    the field and the rule that was broken.
//   NotFound         an unknown node or pod.
//   AlreadyExists    a pod that is already placed somewhere else.
//   ResourceExhausted  a queue refuses the job (OverLimit, NonPreemptibleOverQuota).
//   Internal         our fault; never expected.
// Invariants (no GPU over memory, no mode mix) are assertions inside the ledger, not statuses.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace fracpack {

enum class Code {
  kOk,
  kUnschedulable,
  kUnschedulableAndUnresolvable,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kResourceExhausted,
  kFailedPrecondition,  ///< the server is not in a state to do this (an Apply while the API server is the truth)
  kUnavailable,         ///< not now, here: a follower replica, or a leader catching up (retry, at the leader)
  kInternal,
};

/// The kube-scheduler spelling of a code ("Unschedulable", "UnschedulableAndUnresolvable", ...).
std::string_view code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  /// `subject` names what the error is about, for callers that answer with structured details:
  /// the quota holder of a kResourceExhausted ("queue:team-a", google.rpc.QuotaFailure's subject),
  /// or the request field of a kInvalidArgument ("pod", google.rpc.BadRequest's field).
  Status(Code code, std::string message, std::string subject)
      : code_(code), message_(std::move(message)), subject_(std::move(subject)) {}

  static Status ok() { return {}; }

  [[nodiscard]] bool is_ok() const { return code_ == Code::kOk; }
  [[nodiscard]] Code code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] const std::string& subject() const { return subject_; }

  bool operator==(const Status&) const = default;

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::string subject_;
};

template <class... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return {Code::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...)};
}

/// A value or the Status that explains why there is none (C++23's std::expected, by hand).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The error; an OK status when a value is held.
  [[nodiscard]] Status status() const {
    if (const auto* s = std::get_if<Status>(&v_)) return *s;
    return Status::ok();
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fracpack
