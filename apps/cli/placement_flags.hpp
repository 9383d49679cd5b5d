// The placement flags every command that places shares (place, serve): one spelling, one default,
// one rule, so that `place` answers what `serve` would.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fracpack/core/config.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::cli {

class PlacementFlags {
 public:
  /// Adds --sharing-mode, --reserved-gpu-memory, --rdma-resource, --network-leaf-label and
  /// --scheduler-name to `app`.
  void add(CLI::App& app);
  /// Writes what was given into `placement` and `decode` (defaults stay where a flag was not
  /// given). kInvalidArgument naming the flag for a bad --reserved-gpu-memory; nothing changes then.
  [[nodiscard]] Status apply(PlacementConfig& placement, DecodeConfig& decode) const;

 private:
  std::string sharing_mode_ = "NvFractions";
  std::string reserved_ = "0";
  std::vector<std::string> rdma_;
  std::string network_leaf_label_ = PlacementConfig{}.network_leaf_label;
  std::vector<std::string> scheduler_names_;
};

}  // namespace fracpack::cli
