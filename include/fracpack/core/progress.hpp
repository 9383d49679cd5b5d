// A one-line progress bar on stderr for long commands (replay, bench density, quota tune), with
// the rate and the time left; nothing when stderr is not a terminal (a log or a pipe gets no
// carriage-return art).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace fracpack {

/// "[=====     ] 120/3000 pods  12.0/s  ETA 4m00s": `done` of `total` `unit` after `seconds`.
/// The rate and ETA are left out until something is done; ETA is "0s" once done == total.
std::string progress_line(std::size_t done, std::size_t total, double seconds, const std::string& unit);

/// "1h02m", "4m00s", "42s": a duration for people, whole seconds.
std::string human_duration(double seconds);

/// Whether stderr is a terminal (progress is drawn only there).
bool stderr_is_terminal();

class ProgressBar {
 public:
  /// `unit`: what is counted ("pods", "runs"). Timing starts now.
  explicit ProgressBar(std::string unit);
  /// Redraws the line in place (on a terminal only); ends it when done == total.
  void update(std::size_t done, std::size_t total);

 private:
  std::string unit_;
  std::chrono::steady_clock::time_point start_;
  bool terminal_;
};

}  // namespace fracpack
