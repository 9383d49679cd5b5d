// Small files under the temp directory, named per process so parallel test runs do not collide,
// and reading a file back whole.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

namespace fracpack::test {

/// The whole text of `path`; "" when it cannot be read (a test then fails on what it expected).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("fracpack-{}-{}", getpid(), name);
  std::ofstream(path) << text;
  return path;
}

/// A SQLite state file's path under the temp directory, removed with its WAL, shared memory and
/// lock files when it goes out of scope.
struct StateFile {
  std::string path;
  explicit StateFile(const std::string& label = "state")
      : path((std::filesystem::temp_directory_path() / fmt::format("fracpack-{}-{}-{}.db", label, getpid(), std::rand())).string()) {}
  StateFile(const StateFile&) = delete;
  StateFile& operator=(const StateFile&) = delete;
  ~StateFile() {
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix);
  }
};

}  // namespace fracpack::test
