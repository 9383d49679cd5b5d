// The test harness's ports: processes running side by side never share one, and a server child is
// up only when it is the one answering (support/test_ports.hpp).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <httplib.h>

#include <doctest/doctest.h>

#include "support/server_process.hpp"
#include "support/test_ports.hpp"

namespace fracpack::test {
namespace {

constexpr int kPortsEach = 200;

std::vector<int> take_ports(int count) {
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) ports.push_back(free_port());
  return ports;
}

TEST_CASE("free_port: two processes taking ports at once never get the same one") {
  // The child starts from the same place in the range (it inherits the parent's cursor), so only
  // the locks keep them apart; each keeps its ports until both have taken theirs.
  int results[2];
  int done[2];
  REQUIRE(::pipe(results) == 0);
  REQUIRE(::pipe(done) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::vector<int> mine = take_ports(kPortsEach);
    const auto bytes = static_cast<ssize_t>(mine.size() * sizeof(int));
    const bool sent = ::write(results[1], mine.data(), static_cast<std::size_t>(bytes)) == bytes;
    char go = 0;
    const bool waited = ::read(done[0], &go, 1) == 1;  // hold the locks until the parent is done
    ::_exit(sent && waited ? 0 : 1);
  }
  const std::vector<int> mine = take_ports(kPortsEach);
  std::vector<int> theirs(kPortsEach);
  std::size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(theirs.data());
  while (got < theirs.size() * sizeof(int)) {
    const ssize_t n = ::read(results[0], bytes + got, theirs.size() * sizeof(int) - got);
    REQUIRE(n > 0);
    got += static_cast<std::size_t>(n);
  }
  REQUIRE(::write(done[1], "x", 1) == 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::set<int> all(mine.begin(), mine.end());
  CHECK(all.size() == mine.size());  // nor one process twice
  all.insert(theirs.begin(), theirs.end());
  CHECK(all.size() == mine.size() + theirs.size());
  CHECK(*all.begin() >= kFirstTestPort);
  CHECK(*all.rbegin() <= kLastTestPort);
  for (int fd : {results[0], results[1], done[0], done[1]}) ::close(fd);
}

TEST_CASE("ServerProcess: another process answering /healthz on the port is not taken for the server") {
  // What CI once hit: a port handed to two tests, the other one's server answering the probe.
  httplib::Server other;
  other.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
  const int port = free_port();
  REQUIRE(other.bind_to_port("127.0.0.1", port));
  std::thread serving([&other] { other.listen_after_bind(); });
  CHECK(process_listens_on(::getpid(), port));  // bound and listening before the thread runs
  // fracpack serve cannot listen there and exits; the probe's 200 comes from `other`.
  const auto start = [port] { ServerProcess server(FRACPACK_BINARY, {"--state", ":memory:"}, port); };
  CHECK_THROWS_WITH_AS(start(), doctest::Contains("exited at start"), std::runtime_error);
  other.stop();
  serving.join();
  CHECK_FALSE(process_listens_on(::getpid(), port));
}

TEST_CASE("ServerProcess: up means the child itself listens on its port") {
  ServerProcess server(FRACPACK_BINARY, {"--state", ":memory:"}, free_port());
  CHECK(process_listens_on(server.pid(), server.http_port()));
  CHECK_FALSE(process_listens_on(::getpid(), server.http_port()));
}

}  // namespace
}  // namespace fracpack::test
