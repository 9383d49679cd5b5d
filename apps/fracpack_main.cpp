// fracpack: the command-line entry point. Thin: each subcommand (apps/cli/) adds its flags and
// calls the library; main parses and runs the one given.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "fracpack/core/build_info.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"fracpack: fractional-GPU placement, compatible with NVIDIA KAI Scheduler"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fracpack::version_line(), "Print the version, git commit and build date, and exit");
  namespace cli = fracpack::cli;
  std::vector<std::unique_ptr<cli::Command>> commands;
  commands.push_back(cli::add_place(app));
  commands.push_back(cli::add_policies(app));
  commands.push_back(cli::add_serve(app));
  commands.push_back(cli::add_replay(app));
  auto* bench = app.add_subcommand("bench", "Benchmarks on real traces");
  bench->require_subcommand(1);
  commands.push_back(cli::add_bench_density(*bench));
  auto* quota = app.add_subcommand("quota", "Queue quotas over time: replay a workload through KAI queues, and tune quotas");
  quota->require_subcommand(1);
  commands.push_back(cli::add_quota_replay(*quota));
  commands.push_back(cli::add_quota_tune(*quota));
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks required flags before unknown ones: `--clusters` would be told "--cluster is
    // required". Name the unknown flag first.
    std::vector<std::string> unknown;
    for (const auto& arg : app.remaining(true)) {
      if (arg.size() > 1 && arg[0] == '-') unknown.push_back(arg);
    }
    if (!unknown.empty()) {
      fmt::print(stderr, "unknown flag{} {}\nRun with --help for more information.\n", unknown.size() > 1 ? "s" : "",
                 fmt::join(unknown, ", "));
      return cli::kInputError;
    }
    return app.exit(e) == 0 ? 0 : cli::kInputError;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? 0 : cli::kInputError;
  }
  for (const auto& command : commands) {
    if (command->parsed()) return command->run();
  }
  return cli::kInputError;  // unreachable: CLI11 requires one subcommand
}

}  // namespace

int main(int argc, char** argv) {
  // Every bad input has its own message; this is the net under a bug of ours, never a crash.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fracpack: internal error: {}\n", e.what());
    return 3;
  }
}
