#include "plugin_api/decision_log.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/quoting.hpp"

namespace fracpack::api {

// Names come from requests: each goes through printable(), so a newline in one cannot forge a log
// line even where the logger is not the server's own (which escapes whole messages: log_format.hpp).

std::string pod_key(const nlohmann::json& pod) {
  std::string ns = k8s::metadata_string(pod, "namespace");
  std::string name = k8s::metadata_string(pod, "name");
  return printable((ns.empty() ? "default" : ns) + "/" + (name.empty() ? "?" : name));
}

void log_filter(const nlohmann::json& pod, const Result<FilterAnswer>& answer, std::size_t candidates) {
  if (!answer) {
    spdlog::info("filter {}: refused: {}", pod_key(pod), printable(answer.status().message()));
  } else {
    spdlog::info("filter {}: {} of {} nodes fit", pod_key(pod), answer->passed.size(), candidates);
  }
}

void log_bind(const std::string& pod, const std::string& node, const Result<BindAnswer>& answer) {
  if (!answer) {
    spdlog::info("bind {} to {}: refused: {}", printable(pod), printable(node), printable(answer.status().message()));
  } else {
    spdlog::info("bind {} to {} GPUs [{}]", printable(answer->pod), printable(answer->node), fmt::join(answer->choice.gpus, ","));
  }
}

}  // namespace fracpack::api
