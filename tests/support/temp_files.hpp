// A small file under the temp directory, named per process so parallel test runs do not collide.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace fracpack::test {

inline std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("fracpack-{}-{}", getpid(), name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace fracpack::test
