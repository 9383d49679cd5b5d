#include "command.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "fracpack/binpack/policy.hpp"

namespace fracpack::cli {

std::function<std::string(const std::string&)> seconds_check(double low, double high, bool zero_off) {
  return [=](const std::string& text) -> std::string {
    double v = 0;
    try {
      std::size_t used = 0;
      v = std::stod(text, &used);
      if (used != text.size()) return "not a number of seconds: " + text;
    } catch (const std::exception&) {
      return "not a number of seconds: " + text;
    }
    if (zero_off && v == 0) return "";
    if (zero_off && v > 0 && v < 0.001) return "below 1 ms, which would turn it off: give 0 for that";
    if (!(v >= std::max(low, 0.001) && v <= high)) {
      return fmt::format("must be {}{} to {} seconds: {}", zero_off ? "0 (off) or " : "", std::max(low, 0.001), high, text);
    }
    return "";
  };
}

CLI::Validator decimal_check(double low, double high, bool low_included, const std::string& name) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool above = low_included ? v >= low : v > low;
        if (end == text.c_str() || *end != '\0' || !(above && v <= high)) return fmt::format("must be a number in {}, got {}", name, text);
        return "";
      },
      name);
}

std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5));
}

CLI::Validator input_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string { return path == "-" ? std::string() : CLI::ExistingFile(path); },
      "FILE|-");
}

std::vector<std::string> all_policy_names() {
  std::vector<std::string> names;
  for (auto n : policy_names()) names.emplace_back(n);
  for (auto n : study_policy_names()) names.emplace_back(n);
  return names;
}

}  // namespace fracpack::cli
