// A hardened HTTP/1.1 server (Boost.Beast over Asio) for the extender's JSON front and its probe
// listener. The front decides what a request means; this layer decides what a connection may cost:
//
// - Connections are read asynchronously: a slow or idle client holds a socket, never a thread.
//   A few `io_threads` read, write, and run the handlers of requests that arrived whole on the
//   thread that read them (no hand-off: 64 threads running the reads cost 0.9 ms of CPU per
//   scheduled pod, docs/benchmarks.md). A handler that may wait (route(..., may_wait)) runs on
//   one of `workers` instead, so that it never holds a reading thread.
// - Deadlines per connection, not per byte: the first byte of the next request within
//   `idle_timeout`, the rest of its header within `header_timeout`, its body within
//   `body_timeout`, the answer written within `write_timeout`. A client that trickles one byte
//   every half second is cut off when its deadline passes.
// - `max_connections` open connections at most (more are closed at accept): not the thread count;
//   and `max_connections_per_client` from one IP address, so that one caller cannot take them all.
//   A new connection's first request must start within `header_timeout`, not `idle_timeout`: a
//   caller that connects and says nothing holds its slot 10 s, not 60.
// - Bodies are limited after decompression: a `Content-Encoding: gzip` or `deflate` body is
//   inflated with zlib up to `max_body` bytes and refused (413) beyond. Other encodings get 415.
// - Framing that smuggling relies on is refused (400): two Content-Length fields, a Content-Length
//   list, Content-Length with chunked, two Host, Authorization, Content-Type, Content-Encoding,
//   Expect or Transfer-Encoding fields, an HTTP/1.1 request without Host. A chunked body gets 411
//   (its chunk extensions and trailers would have no limit), another transfer coding 501; trailer
//   fields never count as headers. Headers are limited to `max_header_bytes` (431). Obsolete
//   line folding is read as a space, as RFC 9112 §5.2 allows.
// - A HEAD is answered as its GET without the body; a path served for another method gets 405
//   with Allow; an absolute-form target ("http://host/healthz") is read as its path.
// - TLS (`tls`): the port speaks only TLS 1.2+; with a client CA, the client must present a
//   certificate it signed, and the request carries that certificate's subject common name.
// - The listen backlog is the system's (SOMAXCONN), not 5.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fracpack/core/status.hpp"
#include "plugin_api/tls_files.hpp"

namespace fracpack::api {

/// One request, read whole. Header names are matched case-insensitively.
struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< the target without its query
  std::string query;   ///< what follows '?' in the target ("" when none), as sent
  std::string body;    ///< decompressed
  std::vector<std::pair<std::string, std::string>> headers;
  /// The verified client certificate's subject CN (mutual TLS), "" when there is none.
  std::string peer_name;
  std::string remote;  ///< "ip:port" of the peer

  /// The first header of that name, "" when absent.
  [[nodiscard]] std::string_view header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra fields
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;
/// A handler that answers later: it calls `respond` exactly once, from any thread, when the answer
/// is ready; no thread waits meanwhile.
using HttpResponder = std::function<void(HttpResponse)>;
using HttpAsyncHandler = std::function<void(const HttpRequest&, HttpResponder respond)>;
/// The body of a refusal the server makes itself (413, 431, 400 for bad framing, 415): status,
/// the request's path ("" when the header could not be read) and why.
using HttpRefusal = std::function<HttpResponse(int status, const std::string& path, const std::string& why)>;

/// Called once a request's header is read, before its body (body empty): an answer refuses the
/// request unread; nullopt reads it. For authentication: a caller without credentials never gets
/// the server to read, and hold, a body of --max-body bytes.
using HttpAdmission = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                          ///< 0: any free port (tests)
  std::size_t max_body = 8u << 20;       ///< bytes after decompression
  std::size_t max_header_bytes = 64u << 10;
  std::size_t max_connections = 1024;
  std::size_t max_connections_per_client = 256;  ///< from one IP address
  int io_threads = 2;                    ///< threads reading, running the handlers that do not wait, writing
  int workers = 64;                      ///< threads for handlers that may wait (a Bind, for its reservation pod)
  std::size_t keep_alive_requests = 100'000;  ///< requests on one connection before it is closed
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds write_timeout{30'000};
  /// gzip answers of type application/json when the request accepts gzip.
  bool gzip = false;
  TlsFiles tls;  ///< cert and key set: HTTPS; client_ca set too: client certificates required
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Serves `method path` exactly. Register before start(). `may_wait`: the handler can block
  /// (seconds); it runs on a worker thread.
  void route(std::string method, std::string path, HttpHandler handler, bool may_wait = false);
  /// Serves `method path` exactly, answered when `handler` calls its responder (a Bind waiting for
  /// a reservation pod's report holds its connection, not a thread). The handler itself runs on a
  /// worker: it may block briefly. Register before start().
  void route_async(std::string method, std::string path, HttpAsyncHandler handler);
  /// What every other request gets (404 by default).
  void fallback(HttpHandler handler);
  void refusals(HttpRefusal refusal);
  void admission(HttpAdmission admit);

  /// Binds and starts serving in the background. Returns the bound port; kInvalidArgument for
  /// TLS files that cannot be used, kInternal when the address cannot be bound.
  Result<int> start();
  /// Stops accepting, lets the requests being handled finish and be answered (as long as their
  /// handlers take: a Bind may wait for its reservation pod), then closes every connection.
  void stop();
  /// Connections open now (tests, metrics).
  [[nodiscard]] std::size_t connections() const;
  /// Connections closed at accept since start because a cap was reached (metrics).
  [[nodiscard]] std::uint64_t refused() const;

  struct Impl;  ///< defined in http_server.cpp (named there by the connections it owns)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fracpack::api
