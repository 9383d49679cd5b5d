// Small typed accessors over Kubernetes objects held as JSON: each error names the object and
// the field. Used by the decoders (src/k8s/) and the server's watch.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/core/quoting.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// `status` with "<who>: " in front, so every decoding error starts with the object it is about.
inline Status in_context(const Status& status, std::string_view who) {
  return {status.code(), fmt::format("{}: {}", who, status.message())};
}

/// obj[key] when obj is an object and the member exists and is not null; else nullptr.
inline const nlohmann::json* member(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

/// The text of a scalar: a string as is, an integer or decimal as written, true/false.
/// nullopt for objects and arrays.
inline std::optional<std::string> scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_float() || v.is_boolean()) return v.dump();
  return std::nullopt;
}

/// obj[key] as a map of strings (labels, annotations, nodeSelector, resource lists).
/// Absent or null gives an empty map; a non-object or a non-scalar value is an error naming `what`.
inline Result<std::map<std::string, std::string>> string_map(const nlohmann::json& obj, std::string_view key,
                                                             std::string_view what) {
  std::map<std::string, std::string> out;
  const nlohmann::json* m = member(obj, key);
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
inline Result<std::optional<std::string>> optional_string(const nlohmann::json& obj, std::string_view key,
                                                          std::string_view what) {
  const nlohmann::json* v = member(obj, key);
  if (v == nullptr) return std::optional<std::string>{};
  auto text = scalar_text(*v);
  if (!text) return invalid_argument("{}: {} must be a string, not a {}", what, key, v->type_name());
  return std::optional<std::string>{std::move(*text)};
}

/// obj[key] when it is an object (nullptr when absent); error when it is something else.
inline Result<const nlohmann::json*> optional_object(const nlohmann::json& obj, std::string_view key, std::string_view what) {
  const nlohmann::json* v = member(obj, key);
  if (v != nullptr && !v->is_object()) {
    return invalid_argument("{}: {} must be a map, not a {}", what, key, v->type_name());
  }
  return v;
}

/// obj[key] when it is an array (nullptr when absent); error when it is something else.
inline Result<const nlohmann::json*> optional_array(const nlohmann::json& obj, std::string_view key, std::string_view what) {
  const nlohmann::json* v = member(obj, key);
  if (v != nullptr && !v->is_array()) {
    return invalid_argument("{}: {} must be a list, not a {}", what, key, v->type_name());
  }
  return v;
}

}  // namespace fracpack::k8s
