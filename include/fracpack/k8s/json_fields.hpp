// Small typed accessors over Kubernetes objects held as JSON. Internal to src/k8s/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/core/quoting.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

using nlohmann::json;

/// `status` with "<who>: " in front, so every decoding error starts with the object it is about.
inline Status in_context(const Status& status, std::string_view who) {
  return {status.code(), fmt::format("{}: {}", who, status.message())};
}

/// obj[key] when obj is an object and the member exists and is not null; else nullptr.
inline const json* member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

/// The text of a scalar: a string as is, an integer or decimal as written, true/false.
/// nullopt for objects and arrays.
inline std::optional<std::string> scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_float() || v.is_boolean()) return v.dump();
  return std::nullopt;
}

/// obj[key] as a map of strings (labels, annotations, nodeSelector, resource lists).
/// Absent or null gives an empty map; a non-object or a non-scalar value is an error naming `what`.
inline Result<std::map<std::string, std::string>> string_map(const json& obj, std::string_view key,
                                                             std::string_view what) {
  std::map<std::string, std::string> out;
  const json* m = member(obj, key);
  if (m == nullptr) return out;
  if (!m->is_object()) return invalid_argument("{}: {} must be a map, not a {}", what, key, m->type_name());
  for (const auto& [k, v] : m->items()) {
    if (v.is_null()) continue;
    auto text = scalar_text(v);
    if (!text) return invalid_argument("{}: {}[\"{}\"] must be a string, not a {}", what, key, excerpt(k), v.type_name());
    out.emplace(k, std::move(*text));
  }
  return out;
}

/// obj[key] as a string; nullopt when absent; error when present but not a scalar.
inline Result<std::optional<std::string>> optional_string(const json& obj, std::string_view key,
                                                          std::string_view what) {
  const json* v = member(obj, key);
  if (v == nullptr) return std::optional<std::string>{};
  auto text = scalar_text(*v);
  if (!text) return invalid_argument("{}: {} must be a string, not a {}", what, key, v->type_name());
  return std::optional<std::string>{std::move(*text)};
}

/// obj[key] when it is an object (nullptr when absent); error when it is something else.
inline Result<const json*> optional_object(const json& obj, std::string_view key, std::string_view what) {
  const json* v = member(obj, key);
  if (v != nullptr && !v->is_object()) {
    return invalid_argument("{}: {} must be a map, not a {}", what, key, v->type_name());
  }
  return v;
}

/// obj[key] when it is an array (nullptr when absent); error when it is something else.
inline Result<const json*> optional_array(const json& obj, std::string_view key, std::string_view what) {
  const json* v = member(obj, key);
  if (v != nullptr && !v->is_array()) {
    return invalid_argument("{}: {} must be a list, not a {}", what, key, v->type_name());
  }
  return v;
}

}  // namespace fracpack::k8s
