// Running the fracpack command from a test: what it prints and how it exits.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

#include <doctest/doctest.h>

namespace fracpack::test {

/// What the shell command `command` prints on stdout (add `2>&1` for stderr too), and its exit
/// code (-1 when it did not exit normally).
inline std::pair<std::string, int> output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace fracpack::test
