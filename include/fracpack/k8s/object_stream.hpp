// Reading Kubernetes objects the way `kubectl get -o yaml|json` prints them.
//
// Accepted shapes: one object; a `List` (or `NodeList`, `PodList`, ...) with `items`; a JSON
// array of objects; a multi-document YAML stream (`---` separated), any document of which may be a
// List. Every object comes out as JSON (nlohmann::json), so one decoder serves YAML and JSON
// files alike (the network fronts parse their own bodies, with the same depth bound:
// too_deep_json()).
//
// YAML scalars: quoted ones and `!!str` are strings; plain ones that read as integers, true/false
// or null become those JSON types; decimals and everything else stay text, exactly as written
// ("0.00001" must not become "1e-05"). Decoders accept either a number or its text where
// Kubernetes wants a quantity or a string (an unquoted `gpu-fraction: 0.5`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// Parses `text` (YAML or JSON; JSON when the first non-blank character is '{' or '[', YAML when
/// that is not valid JSON: flow style). `source` names the input in errors
/// ("examples/cluster.yaml"); errors carry the parser's line and column. Refused with
/// kInvalidArgument (docs/requests.md rule 23): malformed text, NUL bytes, nesting deeper than 128
/// levels (after YAML aliases are expanded), YAML aliases to their own ancestors or to no anchor,
/// alias expansion beyond max(10⁶, 20 × input bytes) nodes, map keys that are not scalars,
/// duplicate map keys (YAML and JSON), JSON numbers beyond a double, and documents that are not
/// objects, Lists or arrays of objects.
Result<std::vector<nlohmann::json>> read_objects(std::string_view text, std::string_view source);

/// The path that means standard input, as in kubectl's `-f -`.
inline constexpr std::string_view kStandardInput = "-";

/// Reads the file at `path` (at most 512 MiB; FIFOs such as `<(kubectl get ...)` work; `-` is
/// standard input) and parses it with read_objects(). kNotFound when it cannot be read.
Result<std::vector<nlohmann::json>> read_objects_file(const std::string& path);

/// An object with where it came from, for messages about objects that have no usable name.
struct InputObject {
  nlohmann::json object;
  std::string origin;  ///< "pods.yaml, object 3"
};

/// Objects with origins "<source>, object N".
std::vector<InputObject> with_origins(std::vector<nlohmann::json> objects, std::string_view source);

/// read_objects_file() with each object's origin.
Result<std::vector<InputObject>> read_input_file(const std::string& path);

/// `kind` of an object, "" when absent or not a string.
std::string kind_of(const nlohmann::json& object);

/// `metadata.<field>` of an object ("name", "namespace", "uid"), "" when absent or not a string.
std::string metadata_string(const nlohmann::json& object, const char* field);

/// "Kind namespace/name" (or "Kind name", or "Kind #index") for messages.
std::string describe(const nlohmann::json& object, std::size_t index);

/// Deepest bracket nesting in `text` (JSON strings skipped when `json_strings`).
int max_bracket_depth(std::string_view text, bool json_strings);
/// Whether JSON `text` nests deeper than any Kubernetes object (128 levels, the file reader's limit).
/// Checked before parsing request bodies: copying or printing a deeper document recurses past the
/// stack.
bool too_deep_json(std::string_view text);
/// What too_deep_json() refuses, for messages ("the body " + kTooDeep).
inline constexpr const char* kTooDeep = "nests deeper than 128 levels; Kubernetes objects are far shallower";

}  // namespace fracpack::k8s
