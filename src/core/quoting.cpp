#include "fracpack/core/quoting.hpp"

#include <fmt/format.h>

namespace fracpack {
namespace {

/// The length of the valid UTF-8 sequence starting at text[i] (1..4), or 0 when the bytes there
/// are not one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut off).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  const std::size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (n == 0 || lead > 0xF4 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  const unsigned char second = byte(i + 1);
  if (lead == 0xE0 && second < 0xA0) return 0;  // overlong
  if (lead == 0xED && second >= 0xA0) return 0;  // UTF-16 surrogate
  if (lead == 0xF0 && second < 0x90) return 0;  // overlong
  if (lead == 0xF4 && second >= 0x90) return 0;  // past U+10FFFF
  return n;
}

/// The code point of the valid sequence text[i, i + n).
char32_t code_point(std::string_view text, std::size_t i, std::size_t n) {
  static constexpr unsigned char kLeadBits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t c = static_cast<unsigned char>(text[i]) & kLeadBits[n];
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return c;
}

/// The escape for code point `c`, or "" when it prints as itself.
std::string escape_for(char32_t c) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (c < 0x20 || c == 0x7F) return fmt::format("\\x{:02x}", static_cast<unsigned>(c));
  if ((c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029) return fmt::format("\\u{:04x}", static_cast<unsigned>(c));
  return {};
}

}  // namespace

std::string excerpt_list(const std::vector<std::string>& items, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) out += (i == 0 ? "" : ", ") + excerpt(items[i]);
  if (items.size() > max_items) out += fmt::format(", … ({} in all)", items.size());
  return out;
}

std::string excerpt(std::string_view text, std::size_t max_chars) {
  std::size_t chars = 0;
  std::size_t cut = text.size();  // the byte where character max_chars + 1 starts
  for (std::size_t i = 0; i < text.size();) {
    if (chars == max_chars) cut = i;
    const std::size_t n = utf8_length(text, i);
    i += n == 0 ? 1 : n;  // an invalid byte counts as one character
    ++chars;
  }
  if (chars <= max_chars) return std::string(text);
  return fmt::format("{}…({} characters)", text.substr(0, cut), chars);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const std::string escape = escape_for(code_point(text, i, n));
    if (escape.empty()) {
      out.append(text.substr(i, n));
    } else {
      out += escape;
    }
    i += n;
  }
  return out;
}

}  // namespace fracpack
