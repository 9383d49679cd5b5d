// The HTTP server under the JSON front, attacked the way a hostile or broken caller would: slow
// clients, too many connections, compressed bombs, smuggling framings, plaintext on a TLS port.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <doctest/doctest.h>

#include "plugin_api/http_encoding.hpp"
#include "plugin_api/http_server.hpp"
#include "support/raw_connection.hpp"
#include "support/tls_files.hpp"

namespace fracpack::test {
namespace {

using namespace std::chrono_literals;

/// A server answering GET /who with the caller's certificate name, POST /echo with the body's size.
struct Echo {
  api::HttpServer server;
  int port = 0;
  explicit Echo(api::HttpServerOptions options) : server(std::move(options)) {
    server.route("GET", "/who", [](const api::HttpRequest& req, api::HttpResponse& res) { res.body = "peer=" + req.peer_name; });
    server.route("POST", "/echo", [](const api::HttpRequest& req, api::HttpResponse& res) {
      res.body = std::to_string(req.body.size());
      res.content_type = "application/json";
    });
    auto started = server.start();
    REQUIRE_MESSAGE(started.is_ok(), started.status().message());
    port = *started;
  }
  [[nodiscard]] httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    return c;
  }
};

api::HttpServerOptions small_limits() {
  api::HttpServerOptions o;
  o.max_body = 1u << 20;
  return o;
}

using Raw = RawConnection;

TEST_CASE("a gzip bomb is refused once it inflates past the body limit, and the server keeps serving") {
  Echo s(small_limits());
  const std::string bomb = api::gzip(std::string(128u << 20, ' '));  // 128 MiB of spaces, ~0.6 MB on the wire
  CHECK(bomb.size() < (1u << 20));  // under the limit on the wire
  auto c = s.client();
  auto res = c.Post("/echo", {{"Content-Encoding", "gzip"}}, bomb, "application/json");
  REQUIRE(res);
  CHECK(res->status == 413);
  CHECK(res->body.find("inflates past --max-body (1048576 bytes)") != std::string::npos);
  // A body that inflates within the limit is handled, inflated.
  auto ok = c.Post("/echo", {{"Content-Encoding", "gzip"}}, api::gzip(std::string(1000, 'x')), "application/json");
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(ok->body == "1000");
  auto corrupt = c.Post("/echo", {{"Content-Encoding", "gzip"}}, "not gzip at all", "application/json");
  REQUIRE(corrupt);
  CHECK(corrupt->status == 400);
  auto brotli = c.Post("/echo", {{"Content-Encoding", "br"}}, "x", "application/json");
  REQUIRE(brotli);
  CHECK(brotli->status == 415);
  CHECK(c.Get("/who")->status == 200);
}

TEST_CASE("bytes after the compressed body are refused: a proxy decoding every gzip member would see another body") {
  Echo s(small_limits());
  auto c = s.client();
  for (const std::string& body : {api::gzip("{}") + "GARBAGE", api::gzip("{}") + api::gzip(std::string(1000, ' '))}) {
    auto res = c.Post("/echo", {{"Content-Encoding", "gzip"}}, body, "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(res->body.find("follow the compressed body") != std::string::npos);
  }
  auto one = c.Post("/echo", {{"Content-Encoding", "gzip"}}, api::gzip("{}"), "application/json");
  REQUIRE(one);
  CHECK(one->status == 200);
}

TEST_CASE("slow clients hold sockets, not threads: with 100 trickling headers, every request still answers") {
  api::HttpServerOptions o = small_limits();
  o.workers = 4;  // fewer threads than slow clients
  Echo s(o);
  std::vector<std::unique_ptr<Raw>> slow;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<Raw>(s.port));
    REQUIRE(slow.back()->send("G"));
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& r : slow) CHECK(r->send("E"));  // a byte each, never a whole header
    auto c = s.client();
    auto res = c.Get("/who");
    REQUIRE(res);
    CHECK(res->status == 200);
    auto echo = c.Post("/echo", std::string(5000, 'x'), "application/json");
    REQUIRE(echo);
    CHECK(echo->body == "5000");
  }
}

TEST_CASE("a header that does not arrive whole within its deadline closes the connection") {
  api::HttpServerOptions o = small_limits();
  o.header_timeout = 300ms;
  Echo s(o);
  Raw r(s.port);
  REQUIRE(r.send("GET /who HTTP/1.1\r\nHost: x\r\n"));  // never the blank line
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(100ms);
    r.send("X");  // still trickling: each byte would reset a per-read timeout, not this deadline
  }
  CHECK(r.read_all().empty());  // closed without an answer, well before the test's 20 s receive timeout
}

TEST_CASE("connections beyond the cap are closed at accept; those open keep working, and room frees") {
  api::HttpServerOptions o = small_limits();
  o.max_connections = 4;
  Echo s(o);
  std::vector<std::unique_ptr<Raw>> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<Raw>(s.port));
  for (int i = 0; i < 200 && s.server.connections() < 4; ++i) std::this_thread::sleep_for(5ms);
  REQUIRE(s.server.connections() == 4);
  Raw extra(s.port);
  CHECK(extra.read_all().empty());  // closed at once
  REQUIRE(held[0]->send("GET /who HTTP/1.1\r\nHost: x\r\n\r\n"));
  char buf[512];
  const ssize_t n = ::recv(held[0]->fd, buf, sizeof buf, 0);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<std::size_t>(n)).find("200 OK") != std::string::npos);
  held.pop_back();  // one closes: a new connection is served
  for (int i = 0; i < 200 && s.server.connections() > 3; ++i) std::this_thread::sleep_for(5ms);
  auto res = s.client().Get("/who");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("framings request smuggling relies on are refused with 400; an oversized header with 431") {
  Echo s(small_limits());
  for (const std::string framing : {"Content-Length: 3\r\nContent-Length: 3\r\n", "Content-Length: 3, 3\r\n",
                                    "Content-Length: 3\r\nContent-Length: 4\r\n", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"}) {
    CAPTURE(framing);
    Raw r(s.port);
    REQUIRE(r.send("POST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\nabc"));
    CHECK(r.read_all().rfind("HTTP/1.1 400", 0) == 0);
  }
  Raw big(s.port);
  REQUIRE(big.send("GET /who HTTP/1.1\r\nHost: x\r\nX-Filler: " + std::string(70u << 10, 'a') + "\r\n\r\n"));
  CHECK(big.read_all().rfind("HTTP/1.1 431", 0) == 0);
  CHECK(s.client().Get("/who")->status == 200);
}

TEST_CASE("a field given twice, another transfer coding, or HTTP/1.1 without Host is refused; HTTP/1.0 needs no Host") {
  Echo s(small_limits());
  const std::vector<std::pair<std::string, std::string>> cases{
      {"Host: x\r\nHost: y\r\n", "HTTP/1.1 400"},
      {"Host: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n", "HTTP/1.1 400"},
      {"Host: x\r\nContent-Encoding: gzip\r\nContent-Encoding: identity\r\n", "HTTP/1.1 400"},
      {"Host: x\r\nTransfer-Encoding: identity\r\n", "HTTP/1.1 501"},
      {"Host: x\r\nTransfer-Encoding: gzip, chunked\r\n", "HTTP/1.1 400"},  // with Content-Length
      {"", "HTTP/1.1 400"},  // no Host
  };
  for (const auto& [fields, status] : cases) {
    CAPTURE(fields);
    Raw r(s.port);
    REQUIRE(r.send("POST /echo HTTP/1.1\r\n" + fields + "Content-Length: 3\r\n\r\nabc"));
    const std::string answer = r.read_all();
    CHECK(answer.rfind(status, 0) == 0);
    CHECK(answer.find("\r\n\r\n3") == std::string::npos);  // never echoed as read
  }
  Raw old(s.port);
  REQUIRE(old.send("GET /who HTTP/1.0\r\n\r\n"));
  CHECK(old.read_all().rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("HEAD answers as GET without the body; another method gets 405 with Allow; absolute-form targets are read") {
  Echo s(small_limits());
  Raw r(s.port);
  // HEAD, then GET on the same connection: had a body followed the HEAD's header, it would be
  // read as the start of the next answer.
  REQUIRE(r.send("HEAD /who HTTP/1.1\r\nHost: x\r\n\r\nGET http://x:1/who?q=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string both = r.read_all();
  const auto second = both.find("HTTP/1.1", 1);
  REQUIRE(second != std::string::npos);
  const std::string head = both.substr(0, second);
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(head.find("Content-Length: 5\r\n") != std::string::npos);  // "peer=", the GET's length
  CHECK(head.substr(head.size() - 4) == "\r\n\r\n");               // and nothing after the header
  CHECK(both.substr(second).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(both.substr(both.size() - 5) == "peer=");

  Raw wrong(s.port);
  REQUIRE(wrong.send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\nPOST /who HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
  const std::string answers = wrong.read_all();
  CHECK(answers.rfind("HTTP/1.1 405", 0) == 0);
  CHECK(answers.find("Allow: POST\r\n") != std::string::npos);
  CHECK(answers.find("Allow: GET, HEAD\r\n") != std::string::npos);
  CHECK(s.client().Get("/nowhere")->status == 404);
}

TEST_CASE("one client cannot take every connection: its own cap closes its extra ones, another client is served") {
  api::HttpServerOptions o = small_limits();
  o.max_connections_per_client = 2;
  Echo s(o);
  Raw a(s.port), b(s.port);
  for (int i = 0; i < 200 && s.server.connections() < 2; ++i) std::this_thread::sleep_for(5ms);
  REQUIRE(s.server.connections() == 2);
  Raw third(s.port);
  CHECK(third.read_all().empty());  // closed at accept
  Raw other(s.port, "127.0.0.2");
  REQUIRE(other.send("GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  CHECK(other.read_all().rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("a new connection must start its first request within the header deadline; later ones get the idle one") {
  api::HttpServerOptions o = small_limits();
  o.header_timeout = 300ms;
  o.idle_timeout = 20s;
  Echo s(o);
  Raw silent(s.port);
  const auto start = std::chrono::steady_clock::now();
  CHECK(silent.read_all().empty());  // closed, not the test's 20 s receive timeout
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  Raw talking(s.port);
  REQUIRE(talking.send("GET /who HTTP/1.1\r\nHost: x\r\n\r\n"));
  char buf[512];
  REQUIRE(::recv(talking.fd, buf, sizeof buf, 0) > 0);
  std::this_thread::sleep_for(900ms);  // three header deadlines: a served connection may idle longer
  REQUIRE(talking.send("GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  CHECK(talking.read_all().rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("out of file descriptors, the server pauses accepting instead of spinning, and serves again after") {
  Echo s(small_limits());
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &before) == 0);
  int in_use = 0;  // the highest descriptor open now, a bound on how many are
  for (int fd = 0; fd < 65536; ++fd) {
    if (fcntl(fd, F_GETFD) != -1) in_use = fd;
  }
  rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(in_use + 20);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
  std::vector<int> clients;  // each takes a descriptor here and one in the server, until none is left
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    clients.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(s.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    std::this_thread::sleep_for(5ms);  // the server accepts it, or fails to
  }
  timespec t0{}, t1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  std::this_thread::sleep_for(1s);  // a connection waits in the backlog that the server cannot accept
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  const double cpu = static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e9;
  for (const int fd : clients) ::close(fd);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &before) == 0);
  CHECK(clients.size() > 3);
  CHECK_MESSAGE(cpu < 0.5, "the process used " << cpu << " s of CPU in 1 s while it could not accept: a spin");  // a spin: ~1-2 s
  std::this_thread::sleep_for(300ms);  // the next try, after its pause
  auto res = s.client().Get("/who");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("stop() with a waiting handler in flight: its answer is written, then stop returns") {
  api::HttpServer server{small_limits()};
  server.route("POST", "/slow", [](const api::HttpRequest&, api::HttpResponse& res) {
    std::this_thread::sleep_for(500ms);  // a Bind waiting for its reservation pod
    res.body = "done";
  }, /*may_wait=*/true);
  auto port = server.start();
  REQUIRE(port.is_ok());
  Raw r(*port);
  REQUIRE(r.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  std::this_thread::sleep_for(100ms);  // the handler is running
  std::atomic<bool> stopped{false};
  std::thread([&] {
    server.stop();
    stopped = true;
  }).detach();
  for (int i = 0; i < 1000 && !stopped; ++i) std::this_thread::sleep_for(10ms);
  if (!stopped) {  // the defect this test exists for: stop() waits for ever, and so would the test
    std::fprintf(stderr, "HttpServer::stop() did not return within 10 s with a handler in flight\n");
    std::_Exit(1);
  }
  const std::string answer = r.read_all();
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.substr(answer.size() - 4) == "done");
}

TEST_CASE("a chunked body is refused before it is read (its extensions and trailers have no limit), 411") {
  Echo s(small_limits());
  for (const std::string& body : {std::string("5\r\nhello\r\n0\r\n\r\n"), "5;" + std::string(100000, 'a') + "\r\nhello\r\n0\r\n\r\n",
                                 "0\r\nAuthorization: Bearer x\r\nX-T: " + std::string(100000, 'a') + "\r\n\r\n"}) {
    Raw r(s.port);
    REQUIRE(r.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body));
    const std::string answer = r.read_all();
    CHECK(answer.rfind("HTTP/1.1 411", 0) == 0);
    CHECK(answer.find("Content-Length") != std::string::npos);
  }
  CHECK(s.client().Get("/who")->status == 200);
}

TEST_CASE("answers are gzipped only when enabled and accepted") {
  api::HttpServerOptions o = small_limits();
  o.gzip = true;
  Echo s(o);
  auto c = s.client();
  c.set_decompress(false);
  auto zipped = c.Post("/echo", {{"Accept-Encoding", "gzip, deflate"}}, "abc", "application/json");
  REQUIRE(zipped);
  CHECK(zipped->get_header_value("Content-Encoding") == "gzip");
  auto refused = c.Post("/echo", {{"Accept-Encoding", "gzip;q=0"}}, "abc", "application/json");
  REQUIRE(refused);
  CHECK(refused->get_header_value("Content-Encoding").empty());
  CHECK(refused->body == "3");
  CHECK(api::accepts_gzip("deflate, GZIP;q=0.5"));
  CHECK_FALSE(api::accepts_gzip("x-gzip2, identity"));
}

TEST_CASE("HTTPS: plaintext on the port gets nothing; mutual TLS names the caller and refuses strangers") {
  TlsFiles pki;
  api::HttpServerOptions o = small_limits();
  o.tls = {pki.server_cert, pki.server_key, pki.ca};
  Echo s(o);
  {
    httplib::Client plain("127.0.0.1", s.port);
    plain.set_read_timeout(5, 0);
    auto res = plain.Get("/who");
    CHECK_FALSE((res && res->status == 200));
  }
  {
    httplib::SSLClient client("127.0.0.1", s.port, pki.client_cert, pki.client_key);
    client.set_ca_cert_path(pki.ca.c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Get("/who");
    REQUIRE_MESSAGE(res, httplib::to_string(res.error()));
    CHECK(res->body == "peer=client");
  }
  for (const auto& [cert, key] : {std::pair{std::string(), std::string()}, std::pair{pki.stranger_cert, pki.stranger_key}}) {
    httplib::SSLClient client("127.0.0.1", s.port, cert, key);
    client.set_ca_cert_path(pki.ca.c_str());
    auto res = client.Get("/who");
    CHECK_FALSE((res && res->status == 200));
  }
}

TEST_CASE("TLS files that cannot be used stop the start with the file and the reason") {
  TlsFiles pki;
  api::HttpServerOptions o;
  o.tls = {pki.server_cert, pki.client_key, ""};
  api::HttpServer mismatched(o);
  auto started = mismatched.start();
  REQUIRE_FALSE(started.is_ok());
  CHECK(started.status().message().find(fmt::format("--tls-key {} does not match the certificate in --tls-cert {}", pki.client_key,
                                                     pki.server_cert)) == 0);
  o.tls = {pki.server_cert, "/nonexistent/key.pem", ""};
  api::HttpServer missing(o);
  started = missing.start();
  REQUIRE_FALSE(started.is_ok());
  CHECK(started.status().message().find("/nonexistent/key.pem") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
