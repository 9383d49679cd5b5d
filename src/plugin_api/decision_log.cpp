#include "plugin_api/decision_log.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/quoting.hpp"
#include "plugin_api/log_format.hpp"

namespace fracpack::api {

// Names come from requests: each goes through printable(), so a newline in one cannot forge a log
// line even where the logger is not the server's own (which escapes whole messages: log_format.hpp).

namespace {

/// Characters of a name a log line keeps: the longest a Kubernetes name may be (a DNS subdomain),
/// so that a real name is always logged whole and a made-up 1 MiB one is not.
constexpr std::size_t kLoggedNameChars = 253;

/// A name from a request, for a log line: bounded and escaped.
std::string logged(std::string_view name) { return printable(excerpt(name, kLoggedNameChars)); }

/// A message, for a log line: its sites bound what they quote; this bounds the whole.
std::string logged_message(std::string_view message) { return printable(excerpt(message, 1024)); }

}  // namespace

std::string pod_key(const nlohmann::json& pod) {
  std::string ns = k8s::metadata_string(pod, "namespace");
  std::string name = k8s::metadata_string(pod, "name");
  return logged(ns.empty() ? "default" : ns) + "/" + logged(name.empty() ? "?" : name);
}

namespace {

/// info places; warn refuses (the request's outcome); error is the server's or the API server's.
spdlog::level::level_enum decision_level(Code code) {
  switch (code) {
    case Code::kOk: return spdlog::level::info;
    case Code::kUnschedulable:
    case Code::kUnschedulableAndUnresolvable:
    case Code::kResourceExhausted:
    case Code::kFailedPrecondition:  // a ledger write while following the API server
    case Code::kUnavailable:         // a follower, or a leader still listing, asked to Bind
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kAlreadyExists:
      return spdlog::level::warn;  // the request's outcome, not the server's fault
    case Code::kInternal:
      return spdlog::level::err;  // the API server (not reached, or failed), the state file, the server itself
  }
  return spdlog::level::err;
}

/// The structured fields every decision line carries (log_format.hpp); views into the caller's strings.
LogFields decision_fields(std::string_view verb, std::string_view pod, Code code, double seconds) {
  LogFields fields;
  fields.verb = verb;
  fields.pod = pod;
  fields.code = code_name(code);
  fields.duration_seconds = seconds;
  return fields;
}

}  // namespace

void log_filter(const nlohmann::json& pod, const Result<FilterAnswer>& answer, std::size_t candidates, double seconds) {
  const std::string key = pod_key(pod);
  const Code code = !answer ? answer.status().code() : answer->passed.empty() ? Code::kUnschedulable : Code::kOk;
  const LogFields fields = decision_fields("filter", key, code, seconds);
  const ScopedLogFields scope(fields);
  const double ms = seconds * 1000;
  if (!answer) {
    spdlog::log(decision_level(code), "filter {}: refused: {} ({:.2f} ms)", key, logged_message(answer.status().message()), ms);
  } else if (answer->passed.empty() && !(answer->failed.empty() && answer->unresolvable.empty())) {
    // One node's reason (`explain` gives every node's numbers).
    const auto& [node, why] = answer->failed.empty() ? answer->unresolvable.front() : answer->failed.front();
    spdlog::log(decision_level(code), "filter {}: 0 of {} nodes fit; {}: {} ({:.2f} ms)", key, candidates, logged(node),
                logged_message(why.str()), ms);
  } else {
    spdlog::log(decision_level(code), "filter {}: {} of {} nodes fit ({:.2f} ms)", key, answer->passed.size(), candidates, ms);
  }
}

void log_bind(const std::string& pod, const std::string& node, const Result<BindAnswer>& answer, double seconds) {
  const std::string key = logged(pod);
  const std::string on = logged(node);
  const Code code = answer ? Code::kOk : answer.status().code();
  LogFields fields = decision_fields("bind", key, code, seconds);
  fields.node = on;
  if (answer) fields.gpus = &answer->choice.gpus;
  const ScopedLogFields scope(fields);
  const double ms = seconds * 1000;
  if (!answer) {
    spdlog::log(decision_level(code), "bind {} to {}: refused: {} ({:.2f} ms)", key, on, logged_message(answer.status().message()), ms);
  } else {
    spdlog::log(decision_level(code), "bind {} to {} GPUs [{}] ({:.2f} ms)", key, on, fmt::join(answer->choice.gpus, ","), ms);
  }
}

}  // namespace fracpack::api
