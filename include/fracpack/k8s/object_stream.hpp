// Reading Kubernetes objects the way `kubectl get -o yaml|json` prints them.
//
// Accepted shapes: one object; a `List` (or `NodeList`, `PodList`, ...) with `items`; a JSON
// array of objects; a multi-document YAML stream (`---` separated), any document of which may be a
// List. Every object comes out as JSON (nlohmann::json), so one decoder serves YAML files, JSON
// files and the HTTP extender alike.
//
// YAML scalars are typed like sigs.k8s.io/yaml does for the fields that matter: quoted scalars are
// strings; plain scalars that read as integers, decimals, true/false or null become those JSON
// types. Decoders accept a number where Kubernetes wants a string (an unquoted `gpu-fraction: 0.5`)
// by reading the number's text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/status.hpp"

namespace fracpack::k8s {

/// Parses `text` (YAML or JSON; JSON when the first non-blank character is '{' or '[').
/// `source` names the input in errors ("examples/cluster.yaml"). Errors carry the parser's line.
Result<std::vector<nlohmann::json>> read_objects(std::string_view text, std::string_view source);

/// Reads the file at `path` and parses it with read_objects(). kNotFound when it cannot be read.
Result<std::vector<nlohmann::json>> read_objects_file(const std::string& path);

/// `kind` of an object, "" when absent or not a string.
std::string kind_of(const nlohmann::json& object);

/// "Kind namespace/name" (or "Kind name", or "Kind #index") for messages.
std::string describe(const nlohmann::json& object, std::size_t index);

}  // namespace fracpack::k8s
