// Loopback ports for servers the tests and benchmarks start as child processes, and the check
// that the process answering on one is the child that was meant to.
//
// Why not "bind port 0, read the port, close": the kernel hands that same port to the next
// bind(0) in any process (a kube-rig or server of a test running beside this one under ctest -j),
// and a probe of /healthz then reaches the other test's server. CI saw the crash test read a
// kube-rig's /snapshot that way. So the ports here come from below the kernel's ephemeral range
// (32768–60999 on Linux: bind(0) and outgoing connections never use them), and each is held by
// an flock on /tmp/fracpack-test-ports/<port> for the life of the process that took it, which
// makes it exclusive among every process that allocates through here.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace fracpack::test {

/// The range test servers listen in: above tests/clients/lib.sh's 24500–24599, below the
/// kernel's ephemeral ports.
inline constexpr int kFirstTestPort = 25000;
inline constexpr int kLastTestPort = 32767;

/// Whether a listening socket could be bound on 127.0.0.1:`port` right now.
inline bool loopback_port_free(int port) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) return false;
  const int on = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));  // as the servers bind
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(sock);
  return ok;
}

/// Takes the lock on `port` for the rest of this process (the descriptor is never closed: the
/// kernel drops the lock when the process ends, however it ends). False when another process
/// holds it.
inline bool lock_test_port(int port) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "fracpack-test-ports";
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  ::chmod(dir.c_str(), 01777);  // shared by every user's tests, like /tmp
  const std::string file = (dir / std::to_string(port)).string();
  // Read-only: flock needs no more, so another user's file locks as well.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  return true;
}

/// A loopback port that nothing listens on, that no other process allocating through here holds,
/// and that this process has not been given before (a server's gRPC and HTTP ports are two calls
/// in a row). Throws std::runtime_error when the whole range is taken.
inline int free_port() {
  static int next = kFirstTestPort + static_cast<int>(::getpid() * 131 % (kLastTestPort - kFirstTestPort + 1));
  for (int tried = 0; tried <= kLastTestPort - kFirstTestPort; ++tried) {
    const int port = next;
    next = next == kLastTestPort ? kFirstTestPort : next + 1;
    if (lock_test_port(port) && loopback_port_free(port)) return port;
  }
  throw std::runtime_error("free_port: every port in 25000-32767 is taken or locked");
}

/// The inode of the socket listening on 127.0.0.1:`port` (or on every address), from
/// /proc/net/tcp; 0 when none is.
inline unsigned long listening_inode(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  char wanted[8];
  std::snprintf(wanted, sizeof(wanted), ":%04X", port);
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    const bool on_loopback = local.rfind("0100007F", 0) == 0 || local.rfind("00000000", 0) == 0;
    if (state == "0A" && on_loopback && local.size() > 8 && local.substr(8) == wanted) return inode;
  }
  return 0;
}

/// Whether process `pid` itself holds the socket listening on loopback `port`.
inline bool process_listens_on(pid_t pid, int port) {
  const unsigned long inode = listening_inode(port);
  if (inode == 0) return false;
  const std::string socket = "socket:[" + std::to_string(inode) + "]";
  std::error_code error;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    std::error_code gone;  // a descriptor closed while we look
    if (std::filesystem::read_symlink(fd.path(), gone).string() == socket) return true;
  }
  return false;
}

}  // namespace fracpack::test
