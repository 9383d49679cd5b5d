// Where the shared Alibaba trace is: $FRACPACK_TRACE_DIR, else a `shared/data` folder next to the
// checkout or one of its parents (the layout CI and developers have). Tests that need the trace
// fail under CI=true when it is missing, and are skipped with a message elsewhere.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <doctest/doctest.h>

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

/// The shared data folder; a failure under CI=true when it is missing, a skip message otherwise.
inline std::optional<std::filesystem::path> require_shared_data() {
  auto dir = shared_data_dir();
  if (dir) return dir;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    FAIL("the Alibaba trace (shared/data/alibaba-gpu-v2023) is not found: set FRACPACK_TRACE_DIR");
  } else {
    MESSAGE("skipped: the Alibaba trace is not found (set FRACPACK_TRACE_DIR); under CI=true this fails");
  }
  return std::nullopt;
}

}  // namespace fracpack::test
