// A Kubernetes object that arrives as JSON bytes in a request field (a gRPC message's string
// field, a cached pod): parsed with a depth limit, refused unless it is a JSON object.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// The object in `bytes`, sent in request field `field` ("pod", "objects[2]"). kInvalidArgument
/// with subject `field` when the bytes are not JSON, nest deeper than k8s::too_deep_json allows,
/// or are not a JSON object.
Result<nlohmann::json> parse_object(const std::string& bytes, const std::string& field);

}  // namespace fracpack::api
