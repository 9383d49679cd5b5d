// Reading YAML text into JSON values, through libyaml's event parser (a state machine, not a
// recursive descent: hostile nesting cannot exhaust the stack). Private to the k8s layer; the
// public entry point is object_stream.hpp's read_objects().
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// Every document of a YAML stream, as JSON, in order (an empty document is null). Plain scalars
/// are typed as integer, bool or null where YAML 1.1's core forms say so and stay text otherwise
/// (decimals are kept as written); quoted scalars and `!!str` are strings. Refused, with a message
/// naming `source` (docs/requests.md rule 23): a syntax error (with its line and column), a map key
/// that is not a scalar, a duplicate key, an alias to an undefined anchor or to its own ancestor,
/// nesting deeper than `max_depth`, and aliases expanding beyond `max_nodes` nodes.
Result<std::vector<nlohmann::json>> parse_yaml_documents(std::string_view text, std::string_view source,
                                                         int max_depth, std::size_t max_nodes);

}  // namespace fracpack::k8s
