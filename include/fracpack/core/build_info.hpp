// What this binary is: its version, the git commit it was built from, and when it was configured.
// `fracpack --version` prints it; /metrics exports it as fracpack_build_info{version,revision} 1.
#pragma once

#include <string>
#include <string_view>

namespace fracpack {

/// Facts fixed when the build was configured (cmake/BuildInfo.cmake), for --version and /metrics.
struct BuildInfo {
  std::string_view version;   ///< the CMake project version ("0.1.0")
  std::string_view revision;  ///< git's short commit at configure time; "unknown" outside a git checkout
  std::string_view date;      ///< the configure date, UTC, YYYY-MM-DD (SOURCE_DATE_EPOCH when set)
};

/// This binary's build info.
const BuildInfo& build_info();

/// "fracpack 0.1.0 (git 1a2b3c4, built 2025-01-31)".
std::string version_line();

}  // namespace fracpack
