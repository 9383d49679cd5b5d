#include "fracpack/core/progress.hpp"

#include <cstdio>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

namespace fracpack {

void draw_progress(std::size_t done, std::size_t total) {
  static const bool terminal = isatty(fileno(stderr)) != 0;  // a log or a pipe gets no carriage-return art
  if (!terminal) return;
  constexpr int kWidth = 40;
  const int filled = total == 0 ? kWidth : static_cast<int>(kWidth * done / total);
  fmt::print(stderr, "\r[{}{}] {}/{}", std::string(static_cast<std::size_t>(filled), '='),
             std::string(static_cast<std::size_t>(kWidth - filled), ' '), done, total);
  if (done == total) fmt::print(stderr, "\n");
}

}  // namespace fracpack
