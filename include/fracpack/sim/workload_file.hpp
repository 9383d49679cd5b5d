// The target workload of fgd, fgd-cpu and fgd-lp, read from a file of pods.
#pragma once

#include <string>
#include <vector>

#include "fracpack/core/config.hpp"
#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack {

/// typical_pods() of the pods in `path`: an Alibaba pod-list CSV (a `.csv` file, trace/alibaba.hpp)
/// or Kubernetes Pod objects as kubectl prints them (YAML or JSON; other kinds are skipped).
/// kInvalidArgument naming the file when it holds no pod with a milli-GPU shape; a pod that cannot
/// be decoded is left out with a warning in `warnings` (the decoder's message and the object's
/// origin), or, when `warnings` is null, is kInvalidArgument. kNotFound when it cannot be read.
Result<std::vector<TypicalPod>> read_workload(const std::string& path, const DecodeConfig& decode = {},
                                              std::vector<std::string>* warnings = nullptr);

}  // namespace fracpack
