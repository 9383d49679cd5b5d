// One log line per decision, the same from both fronts: info when it places, warn when it refuses
// (no node fits, a queue or a Bind refuses, a bad request), error when the API server or the
// server failed; with the decision's fields (log_format.hpp) and its time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"

namespace fracpack::api {

/// "namespace/name" of a Pod object as sent, "?" parts where it has none.
std::string pod_key(const nlohmann::json& pod);

/// `seconds`: the decision's time in the server.
void log_filter(const nlohmann::json& pod, const Result<FilterAnswer>& answer, std::size_t candidates, double seconds);
void log_bind(const std::string& pod, const std::string& node, const Result<BindAnswer>& answer, double seconds);

}  // namespace fracpack::api
