// A TCP proxy in front of kube-rig for one fracpack replica: the network between a replica and
// the API server, with latency on the replica's Bindings. Bytes pass unchanged both ways (watches
// stream through); a chunk from the replica that starts a Binding request (POST .../binding) waits
// first: `delay()` long, and while the proxy holds Bindings (hold(true)), until it stops holding.
// Tests only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace fracpack::test {

class LatencyProxy {
 public:
  /// Listens on 127.0.0.1 (any free port) and forwards to 127.0.0.1:`upstream_port`.
  explicit LatencyProxy(int upstream_port) : upstream_port_(upstream_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::listen(listener_, 128) != 0) {
      throw std::runtime_error("latency proxy: cannot listen");
    }
    socklen_t len = sizeof at;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&at), &len);
    port_ = ntohs(at.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  LatencyProxy(const LatencyProxy&) = delete;
  LatencyProxy& operator=(const LatencyProxy&) = delete;
  ~LatencyProxy() {
    stop_ = true;
    hold(false);
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : pumps_) t.join();
  }

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// How long each Binding waits before it is sent on (none by default). Set before traffic.
  void delay(std::function<std::chrono::milliseconds()> d) {
    std::lock_guard lock(mu_);
    delay_ = std::move(d);
  }
  /// While true, Bindings wait here; false lets them all go.
  void hold(bool holding) {
    {
      std::lock_guard lock(mu_);
      holding_ = holding;
    }
    released_.notify_all();
  }
  /// Bindings waiting here now, and Bindings sent on so far.
  [[nodiscard]] int held() const { return held_; }
  [[nodiscard]] int bindings() const { return bindings_; }

 private:
  void accept_loop() {
    while (!stop_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(static_cast<std::uint16_t>(upstream_port_));
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        ::close(client);
        ::close(upstream);
        continue;
      }
      std::lock_guard lock(mu_);
      pumps_.emplace_back([this, client, upstream] { pump(client, upstream); });
    }
  }

  /// Both directions of one connection until either side closes.
  void pump(int client, int upstream) {
    char buffer[64 * 1024];
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    while (!stop_) {
      if (::poll(fds, 2, 200) < 0) break;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          closed = true;
          break;
        }
        if (i == 0 && is_binding(buffer, static_cast<std::size_t>(n))) wait_to_send();
        if (!send_all(fds[1 - i].fd, buffer, static_cast<std::size_t>(n))) closed = true;
      }
      if (closed) break;
    }
    ::close(client);
    ::close(upstream);
  }

  static bool is_binding(const char* data, std::size_t n) {
    const std::string head(data, std::min<std::size_t>(n, 512));
    const auto line_end = head.find("\r\n");
    const std::string line = head.substr(0, line_end);
    return line.starts_with("POST ") && line.find("/binding") != std::string::npos;
  }

  void wait_to_send() {
    std::function<std::chrono::milliseconds()> d;
    {
      std::lock_guard lock(mu_);
      d = delay_;
    }
    ++held_;
    if (d) std::this_thread::sleep_for(d());
    {
      std::unique_lock lock(mu_);
      released_.wait(lock, [&] { return !holding_ || stop_; });
    }
    --held_;
    ++bindings_;
  }

  static bool send_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
      const ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
      if (sent <= 0) return false;
      data += sent;
      n -= static_cast<std::size_t>(sent);
    }
    return true;
  }

  int upstream_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> held_{0};
  std::atomic<int> bindings_{0};
  std::mutex mu_;
  std::condition_variable released_;
  bool holding_ = false;  ///< under mu_
  std::function<std::chrono::milliseconds()> delay_;  ///< under mu_
  std::list<std::thread> pumps_;  ///< under mu_
  std::thread acceptor_;
};

}  // namespace fracpack::test
