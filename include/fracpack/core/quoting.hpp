// Text from input, made safe to put into an error message or a log line.
//
// Names and values arrive from requests, files and the API server, and end up in Status messages
// (which gRPC carries in a metadata header of at most 8 KiB by default) and in log lines. Every
// site that quotes such text goes through these two helpers:
//   excerpt()    bounds it: a 10,000-character pod name is quoted as its first 64 characters and
//                "…(10000 characters)", never whole;
//   printable()  escapes control characters: a newline in a node name cannot start a forged log
//                line, an ESC cannot drive the reader's terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack {

/// Characters of input that a message quotes before cutting it short.
inline constexpr std::size_t kExcerptChars = 64;

/// `text` when it has at most `max_chars` characters (UTF-8 code points); else its first
/// `max_chars` characters (never half of one) followed by "…(N characters)", N its full length.
/// For quoting names and values from input into messages.
std::string excerpt(std::string_view text, std::size_t max_chars = kExcerptChars);

/// Items of input a message lists before cutting the list short.
inline constexpr std::size_t kExcerptItems = 8;

/// `items` ", "-separated, each excerpt()ed; past `max_items`, "… (N in all)". For lists from
/// input (a pod's 10,000 containers, its 40,000 resource names) quoted into one message.
std::string excerpt_list(const std::vector<std::string>& items, std::size_t max_items = kExcerptItems);

/// `text` with every control character escaped, C-style: "\n", "\r", "\t", "\x1b" (other C0 and
/// DEL), "\u009b" (C1 controls), "\u2028"/"\u2029" (Unicode line and paragraph separators), and
/// "\xNN" for each byte that is not part of valid UTF-8. Everything else, backslashes included,
/// is kept, so printable(printable(s)) == printable(s). For every name logged.
std::string printable(std::string_view text);

}  // namespace fracpack
