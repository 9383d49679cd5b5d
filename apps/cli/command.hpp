// One `fracpack` subcommand: it adds its flags to the CLI11 app when made, and runs when parsed.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fracpack::cli {

/// Exit code for input the command refuses (bad flag, unreadable or invalid file).
inline constexpr int kInputError = 2;

class Command {
 public:
  virtual ~Command() = default;
  /// Runs the command after CLI11 parsed its flags; the process exit code.
  virtual int run() = 0;
  [[nodiscard]] bool parsed() const { return app_ != nullptr && app_->parsed(); }

 protected:
  CLI::App* app_ = nullptr;  ///< this command's subcommand, owned by the top-level app
};

/// A CLI11 check of a number of seconds in [low, high]; `zero_off`: 0 is allowed and means off.
std::function<std::string(const std::string&)> seconds_check(double low, double high, bool zero_off);
/// A CLI11 check of a decimal in (low, high] (`name` shows in the help, e.g. "(0, 1]").
CLI::Validator decimal_check(double low, double high, bool low_included, const std::string& name);
std::chrono::milliseconds milliseconds_of(double seconds);
/// An existing file, or `-` for standard input (kubectl's `-f -`).
CLI::Validator input_file();
/// Every policy name `place`, `serve` and `quota` accept (ours, then the study's).
std::vector<std::string> all_policy_names();

}  // namespace fracpack::cli
