#include "fracpack/core/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <unistd.h>

#include <fmt/format.h>

namespace fracpack {

std::string human_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string progress_line(std::size_t done, std::size_t total, double seconds, const std::string& unit) {
  constexpr std::size_t kWidth = 40;
  const std::size_t filled = total == 0 ? kWidth : std::min(kWidth, kWidth * done / total);
  std::string line = fmt::format("[{}{}] {}/{} {}", std::string(filled, '='), std::string(kWidth - filled, ' '), done, total, unit);
  if (done == 0 || seconds <= 0) return line;
  const double rate = static_cast<double>(done) / seconds;
  const double left = done >= total ? 0 : static_cast<double>(total - done) / rate;
  return line + fmt::format("  {:.1f}/s  ETA {}", rate, human_duration(left));
}

bool stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

ProgressBar::ProgressBar(std::string unit)
    : unit_(std::move(unit)), start_(std::chrono::steady_clock::now()), terminal_(stderr_is_terminal()) {}

void ProgressBar::update(std::size_t done, std::size_t total) {
  if (!terminal_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \x1b[K clears what a longer line before left (the ETA shrinks).
  fmt::print(stderr, "\r{}\x1b[K", progress_line(done, total, seconds, unit_));
  if (done >= total) fmt::print(stderr, "\n");
}

}  // namespace fracpack
