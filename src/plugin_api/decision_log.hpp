// One log line per decision (spdlog, info), the same from both fronts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"

namespace fracpack::api {

/// "namespace/name" of a Pod object as sent, "?" parts where it has none.
std::string pod_key(const nlohmann::json& pod);

void log_filter(const nlohmann::json& pod, const Result<FilterAnswer>& answer, std::size_t candidates);
void log_bind(const std::string& pod, const std::string& node, const Result<BindAnswer>& answer);

}  // namespace fracpack::api
