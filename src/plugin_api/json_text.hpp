// JSON written as text where documents would cost too much: answers and requests that list
// thousands of node names (see http_front.cpp, http_client.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/core/quoting.hpp"

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

/// Where and why `text` is not JSON, in nlohmann's words without its exception id ("parse error
/// at line 1, column 9: syntax error while parsing value - invalid literal; last read: 'x'"); ""
/// when it is JSON; at most 256 characters (the "last read" part quotes the input). For error
/// messages only: it parses the whole text again.
inline std::string json_syntax_error(std::string_view text) {
  try {
    [[maybe_unused]] const auto parsed = nlohmann::json::parse(text);
    return "";
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    std::string what = e.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) what.erase(0, close + 2);
    return excerpt(what, 256);
  }
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
