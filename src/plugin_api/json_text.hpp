// JSON written as text where documents would cost too much: answers and requests that list
// thousands of node names (see http_front.cpp, http_client.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fracpack::api {

/// Appends `s` as a JSON string. Node names and reasons are printable ASCII without quotes or
/// backslashes and are written as they are; anything else takes nlohmann's escaping (invalid
/// UTF-8 replaced by U+FFFD).
inline void append_json_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Appends `names` as a JSON list of strings.
template <class Names>
void append_json_strings(std::string& out, const Names& names) {
  out += '[';
  bool first = true;
  for (const auto& n : names) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, n);
  }
  out += ']';
}

}  // namespace fracpack::api
