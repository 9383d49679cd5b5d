// Roughly what a parsed JSON value holds in memory, for caches bounded in bytes. Internal to
// src/plugin_api/.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace fracpack::api {

/// Its strings plus a node's overhead per value (and per object member). An estimate, not an
/// exact count: good enough to hold a cache near its byte budget whatever the JSON's shape (a pod
/// with a 7 MB integer array counts ~16 MB, as it holds). Depth is bounded by the fronts, so the
/// recursion is too.
inline std::size_t approx_bytes(const nlohmann::json& v) {
  std::size_t n = sizeof(nlohmann::json);
  if (v.is_string()) return n + v.get_ref<const std::string&>().size();
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) n += k.size() + 32 + approx_bytes(x);
  } else if (v.is_array()) {
    for (const auto& x : v) n += approx_bytes(x);
  }
  return n;
}

}  // namespace fracpack::api
