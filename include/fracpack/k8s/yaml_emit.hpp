// Writing objects back out as YAML for `kubectl apply -f`: the inverse of object_stream.hpp's
// reader, so read_objects(to_yaml(x)) == x for every JSON object x — except decimals, which that
// reader keeps as their text ("2.5"), as it does for any YAML file (decoders accept both).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fracpack::k8s {

/// A multi-document YAML stream (documents separated by `---`), block style, keys in the JSON
/// object's order. Strings that a YAML reader would type as something else ("true", "12", "null",
/// "") are quoted; numbers, booleans and null stay plain. Throws std::invalid_argument when a key
/// or string is not valid UTF-8 (YAML text must be; anything read by object_stream.hpp is) and
/// std::bad_alloc when memory runs out.
std::string to_yaml(const std::vector<nlohmann::json>& objects);

}  // namespace fracpack::k8s
