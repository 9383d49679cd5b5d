// A child process for tests and benchmarks: `binary` with `args` (args[0] is its name), stderr to
// `log`, killed when the parent dies, and holding none of the parent's descriptors: a child that
// kept a test's sockets would hold their ports and seem to listen there (test_ports_test.cpp).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace fracpack::test {

/// The child's pid, once it has exec'd (or failed to: it then exits 127). Throws
/// std::runtime_error when it cannot fork.
inline pid_t spawn(const std::string& binary, std::vector<std::string> args, const std::string& log) {
  std::vector<char*> argv;  // built before fork: the child only calls what is safe there
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int exec_seen[2];  // the child's end closes at its exec: from then on it holds none of ours
  if (pipe2(exec_seen, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) {
    ::close(exec_seen[0]);
    ::close(exec_seen[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test or benchmark that started it
    std::freopen(log.c_str(), "w", stderr);
    ::close(exec_seen[0]);
    if (exec_seen[1] != 3) dup3(exec_seen[1], 3, O_CLOEXEC);
    close_range(4, ~0U, 0);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  ::close(exec_seen[1]);
  char ignored = 0;
  while (::read(exec_seen[0], &ignored, 1) < 0 && errno == EINTR) {
  }
  ::close(exec_seen[0]);
  return pid;
}

}  // namespace fracpack::test
