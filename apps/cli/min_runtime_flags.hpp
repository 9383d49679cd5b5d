// The minruntime plugin's arguments (KAI's scheduler configuration) as flags, shared by every
// command that chooses victims: place, serve, quota replay and quota tune.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "fracpack/core/status.hpp"
#include "fracpack/queues/min_runtime.hpp"

namespace fracpack::cli {

class MinRuntimeFlags {
 public:
  /// Adds --default-preempt-min-runtime, --default-reclaim-min-runtime and
  /// --reclaim-min-runtime-resolve to `app`.
  void add(CLI::App& app);
  /// What was given, as defaults (docs/queues.md rule 13). kInvalidArgument naming the flag for a
  /// duration that is not Go's syntax or is negative; `defaults` is unchanged then.
  [[nodiscard]] Status apply(queues::MinRuntimeDefaults& defaults) const;

 private:
  std::string preempt_ = "0s";
  std::string reclaim_ = "0s";
  std::string resolve_ = "lca";
};

}  // namespace fracpack::cli
