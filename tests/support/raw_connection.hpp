// A raw TCP connection to a loopback port, to send what no well-behaved client would (half a
// header, a second Host, nothing at all) and read exactly what the server answers.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

namespace fracpack::test {

struct RawConnection {
  int fd = -1;
  /// Connects to 127.0.0.1:`port`; `source`: the local address to connect from (127.0.0.2 is a
  /// second client on loopback). Reads give up after `receive_timeout_s` (a test that waits
  /// longer fails instead of hanging).
  explicit RawConnection(int port, const char* source = nullptr, int receive_timeout_s = 20) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      REQUIRE(::inet_pton(AF_INET, source, &from.sin_addr) == 1);
      REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{receive_timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawConnection() { ::close(fd); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool send(std::string_view bytes) const {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  /// What one read returns ("" when the server closed, "timeout" or "error" when none came).
  [[nodiscard]] std::string read_some() const {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? "timeout" : "error";
    return {buf, static_cast<std::size_t>(n)};
  }
  /// Everything the server sends until it closes ("" when it closed without a word); a receive
  /// timeout or error appends "timeout" or "error".
  [[nodiscard]] std::string read_all() const {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) return out;
      if (n < 0) return out + (errno == EAGAIN || errno == EWOULDBLOCK ? "timeout" : "error");
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
};

}  // namespace fracpack::test
