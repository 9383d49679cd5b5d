#include "plugin_api/decision_log.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/quoting.hpp"

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

void log_filter(const nlohmann::json& pod, const Result<FilterAnswer>& answer, std::size_t candidates) {
  if (!answer) {
    spdlog::info("filter {}: refused: {}", pod_key(pod), logged_message(answer.status().message()));
  } else {
    spdlog::info("filter {}: {} of {} nodes fit", pod_key(pod), answer->passed.size(), candidates);
  }
}

void log_bind(const std::string& pod, const std::string& node, const Result<BindAnswer>& answer) {
  if (!answer) {
    spdlog::info("bind {} to {}: refused: {}", logged(pod), logged(node), logged_message(answer.status().message()));
  } else {
    spdlog::info("bind {} to {} GPUs [{}]", logged(answer->pod), logged(answer->node), fmt::join(answer->choice.gpus, ","));
  }
}

}  // namespace fracpack::api
