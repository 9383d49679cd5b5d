// Blanks around a field of a header value or a line of a flag file. Internal to src/plugin_api/.
#pragma once

#include <string_view>

namespace fracpack::api {

/// `s` without leading and trailing spaces, tabs and carriage returns.
constexpr std::string_view trim_blanks(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\r";
  const auto first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

}  // namespace fracpack::api
