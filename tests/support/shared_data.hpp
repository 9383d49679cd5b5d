// Where the shared Alibaba trace is: $FRACPACK_TRACE_DIR (the folder that holds
// alibaba-gpu-v2023/ and fgd-published/), else a `shared/data` folder next to the checkout or one
// of its parents (the layout CI and developers have). For tests and benchmarks alike.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>

namespace fracpack::test {

/// The folder holding alibaba-gpu-v2023/ and fgd-published/, or nullopt.
inline std::optional<std::filesystem::path> shared_data_dir() {
  if (const char* dir = std::getenv("FRACPACK_TRACE_DIR"); dir != nullptr && *dir != '\0') {
    if (std::filesystem::is_directory(std::filesystem::path(dir) / "alibaba-gpu-v2023")) return std::filesystem::path(dir);
    return std::nullopt;
  }
  std::filesystem::path at = std::filesystem::weakly_canonical(FRACPACK_SOURCE_DIR);
  for (int up = 0; up < 5 && !at.empty(); ++up, at = at.parent_path()) {
    const auto candidate = at / "shared" / "data";
    if (std::filesystem::is_directory(candidate / "alibaba-gpu-v2023")) return candidate;
    if (at == at.parent_path()) break;
  }
  return std::nullopt;
}

}  // namespace fracpack::test
