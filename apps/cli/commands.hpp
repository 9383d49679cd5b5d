// The `fracpack` subcommands, each in its own file: add_X() adds the subcommand and its flags to
// `app` and returns the command that runs when it was parsed.
#pragma once

#include <memory>

#include "command.hpp"

namespace fracpack::cli {

std::unique_ptr<Command> add_place(CLI::App& app);     ///< place_command.cpp
std::unique_ptr<Command> add_policies(CLI::App& app);  ///< policies_command.cpp
std::unique_ptr<Command> add_serve(CLI::App& app);     ///< serve_command.cpp
std::unique_ptr<Command> add_replay(CLI::App& app);    ///< replay_command.cpp
/// `bench density`, under `bench` (bench_command.cpp).
std::unique_ptr<Command> add_bench_density(CLI::App& bench);
/// `quota replay` and `quota tune`, under `quota` (quota_commands.cpp).
std::unique_ptr<Command> add_quota_replay(CLI::App& quota);
std::unique_ptr<Command> add_quota_tune(CLI::App& quota);

}  // namespace fracpack::cli
