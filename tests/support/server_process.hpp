// `fracpack serve` as a child process, for the crash test and the extender benchmark: started with
// the given arguments plus `--http 127.0.0.1:<port>`, ready once GET /healthz answers from it, killed with
// SIGKILL on destruction. Throws std::runtime_error when it cannot start (doctest reports it).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "support/spawn.hpp"
#include "support/test_ports.hpp"

namespace fracpack::test {

class ServerProcess {
 public:
  /// `binary serve --http 127.0.0.1:<http_port> <args...>`, stderr to `log` ("/dev/null" by default),
  /// up once GET /healthz answers on plaintext `probe_port` (0: `http_port`; an HTTPS front has
  /// its probes on `--health`).
  ServerProcess(const std::string& binary, std::vector<std::string> args, int http_port, const std::string& log = "/dev/null",
                int probe_port = 0)
      : http_port_(http_port) {
    args.insert(args.begin(), {"fracpack", "serve", "--http", "127.0.0.1:" + std::to_string(http_port)});
    pid_ = spawn(binary, std::move(args), log);
    const int probed = probe_port != 0 ? probe_port : http_port_;
    httplib::Client c("127.0.0.1", probed);
    for (int i = 0; i < 600; ++i) {
      // Up means this child answers: not some other process that got the port (test_ports.hpp).
      if (auto res = c.Get("/healthz"); res && res->status == 200 && process_listens_on(pid_, probed)) return;
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("the server exited at start (see " + log + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill9();
    throw std::runtime_error("the server did not come up in 30 s");
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { kill9(); }

  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  [[nodiscard]] int http_port() const { return http_port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int http_port_;
};

}  // namespace fracpack::test
