// The shared Alibaba trace for tests (shared_data.hpp finds it): tests that need it fail under
// CI=true when it is missing, and are skipped with a message elsewhere.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "support/shared_data.hpp"

namespace fracpack::test {

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
