#include "plugin_api/http_server.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <spdlog/spdlog.h>

#include "fracpack/core/quoting.hpp"
#include "plugin_api/certificate_name.hpp"
#include "plugin_api/http_encoding.hpp"

namespace fracpack::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// Beast 1.74 speaks boost::string_view.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// The caller's name in the peer's verified certificate, "" without one (certificate_name.hpp).
std::string peer_common_name(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  std::string name = certificate_name(cert);
  X509_free(cert);
  return name;
}

/// A header the server refuses before reading any body: its status and why.
struct HeaderRefusal {
  int status;
  std::string why;
};

/// Fields a request carries once at most: two of them leave which one counts to the reader (a
/// proxy in front may pick the other).
constexpr std::array kSingleFields{http::field::host, http::field::content_type, http::field::content_encoding,
                                   http::field::authorization, http::field::expect, http::field::transfer_encoding};

/// Whether `parser`'s header is one the server refuses: a framing a request smuggler relies on
/// (Content-Length given twice or as a list, which Beast accepts when the values agree; any
/// Transfer-Encoding), a field given twice, or an HTTP/1.1 request without its Host (RFC 9112
/// §3.2, §6.1, §6.3).
std::optional<HeaderRefusal> refused_header(const http::request_parser<http::string_body>& parser, std::size_t max_body) {
  const auto& h = parser.get();
  if (h.count(http::field::content_length) > 1 || sv(h[http::field::content_length]).find(',') != std::string_view::npos) {
    return HeaderRefusal{400, "the request gives its Content-Length more than once: give it once"};
  }
  for (const auto field : kSingleFields) {
    if (h.count(field) > 1) return HeaderRefusal{400, fmt::format("the request has two {} fields: give it once", sv(http::to_string(field)))};
  }
  // Chunked bodies carry chunk extensions and trailers that no limit of Beast's counts (a caller
  // without credentials could make the server hold hundreds of MB); other codings are unknown
  // here. kube-scheduler always sends Content-Length.
  if (parser.chunked()) {
    return HeaderRefusal{411, fmt::format("send the body with Content-Length (at most {} bytes), not Transfer-Encoding: chunked", max_body)};
  }
  if (h.count(http::field::transfer_encoding) > 0) {
    return HeaderRefusal{501, fmt::format("the transfer coding {:?} is not supported: send the body with Content-Length",
                                          excerpt(sv(h[http::field::transfer_encoding])))};
  }
  if (h.version() >= 11 && h.count(http::field::host) == 0) return HeaderRefusal{400, "an HTTP/1.1 request names its Host"};
  return std::nullopt;
}

/// The origin form ("/path?query") of a request target; an absolute form
/// ("http://host:port/path?query", RFC 9112 §3.2.2) is accepted as a server must.
std::string_view origin_form(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && iequals(target.substr(0, scheme.size()), scheme)) {
      const auto slash = target.find_first_of("/?", scheme.size());
      return slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  return target;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

struct HttpServer::Impl {
  HttpServerOptions options;
  struct Route {
    std::string method, path;
    HttpHandler handler;
    bool may_wait = false;
    HttpAsyncHandler async_handler;  ///< set: answered through a responder (route_async)
  };
  std::vector<Route> routes;
  HttpHandler not_found = [](const HttpRequest& req, HttpResponse& res) {
    res.status = 404;
    res.body = "no such path: " + req.method + " " + req.path + "\n";
  };
  HttpAdmission admit;  ///< empty: every request is read whole
  HttpRefusal refusal = [](int status, const std::string&, const std::string& why) {
    HttpResponse r;
    r.status = status;
    r.body = why + "\n";
    return r;
  };
  // Destroyed in reverse: the io context (and the connections its pending handlers own) before
  // the counters those connections decrement and the TLS context they were made from.
  std::atomic<std::size_t> open{0};      ///< connections
  std::atomic<std::uint64_t> refused{0};  ///< connections closed at accept (a cap reached)
  std::mutex clients_mutex;
  std::unordered_map<std::string, std::size_t> clients;  ///< open connections by IP address
  std::atomic<std::size_t> handling{0};  ///< requests read whole, not yet answered
  std::atomic<bool> stopping{false};
  std::optional<asio::ssl::context> tls;
  asio::io_context io;  // run by `io_threads` threads
  /// Keeps `io` running with nothing pending on it: while stopping, a worker's answer is posted
  /// to a connection that waits on nothing (without it, io.run() would return first and the
  /// answer, and stop(), would wait for ever).
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  /// The acceptor, its pause timer and stop()'s close run on this one strand: with several io
  /// threads, an accept completing on one thread and the close on another would race.
  asio::strand<asio::io_context::executor_type> accept_strand{asio::make_strand(io)};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer accept_pause{accept_strand};  ///< after an accept error (EMFILE): a pause, not a spin
  std::chrono::steady_clock::time_point accept_error_logged{};
  std::vector<std::thread> threads;  ///< each runs `io`: reads, handlers that do not wait, writes
  std::optional<asio::thread_pool> workers;  ///< handlers that may wait

  explicit Impl(HttpServerOptions o) : options(std::move(o)) {}

  /// The route of `req`; a HEAD is answered as its GET, without the body (RFC 9110 §9.3.2).
  [[nodiscard]] const Route* find(const HttpRequest& req) const {
    const std::string_view method = req.method == "HEAD" ? std::string_view("GET") : std::string_view(req.method);
    for (const auto& r : routes) {
      if (r.method == method && r.path == req.path) return &r;
    }
    return nullptr;
  }

  /// The methods `path` is served for ("GET, HEAD" or "POST"), "" when it is not served at all.
  [[nodiscard]] std::string allowed_methods(std::string_view path) const {
    std::string allow;
    for (const auto& r : routes) {
      if (r.path != path) continue;
      allow += (allow.empty() ? "" : ", ") + r.method + (r.method == "GET" ? ", HEAD" : "");
    }
    return allow;
  }

  /// `req`'s body inflated; else the refusal to answer.
  [[nodiscard]] std::optional<HttpResponse> inflate(HttpRequest& req) const {
    auto decoded = decode_body(req.header("Content-Encoding"), std::move(req.body), options.max_body);
    if (!decoded) {
      const Code code = decoded.status().code();
      return refusal(code == Code::kResourceExhausted ? 413 : code == Code::kFailedPrecondition ? 415 : 400, req.path,
                     decoded.status().message());
    }
    req.body = std::move(*decoded);
    return std::nullopt;
  }

  /// The answer to `req` (its body inflated first).
  [[nodiscard]] HttpResponse answer(HttpRequest& req, const Route* route) const {
    HttpResponse res;
    if (auto bad_body = inflate(req)) return std::move(*bad_body);
    if (route != nullptr) {
      route->handler(req, res);
    } else if (const std::string allow = allowed_methods(req.path); !allow.empty()) {
      res = refusal(405, req.path, fmt::format("{} is served for {}, not {:?}", req.path, allow, excerpt(req.method, 16)));
      res.headers.emplace_back("Allow", allow);
    } else {
      not_found(req, res);
    }
    return res;
  }

  Status make_tls();
  void accept();
  void open_session(tcp::socket socket);

  /// Counts a connection from `address`; false (nothing counted) at either cap.
  bool admit_connection(const std::string& address) {
    const std::lock_guard lock(clients_mutex);
    std::size_t& from_client = clients[address];
    if (open.load() >= options.max_connections || from_client >= options.max_connections_per_client) {
      const bool per_client = from_client >= options.max_connections_per_client;
      if (from_client == 0) clients.erase(address);
      if (refused++ % 100 == 0) {  // one line per hundred: a flood must not flood the log
        spdlog::warn("connection from {} closed at accept: {} ({} refused so far); raise --http-max-connections{} if this is the scheduler",
                     address, per_client ? fmt::format("{} already open from this address", options.max_connections_per_client)
                                         : fmt::format("{} open in all", options.max_connections),
                     refused.load(), per_client ? "-per-client" : "");
      }
      return false;
    }
    ++from_client;
    ++open;
    return true;
  }
  void release_connection(const std::string& address) {
    const std::lock_guard lock(clients_mutex);
    if (auto it = clients.find(address); it != clients.end() && --it->second == 0) clients.erase(it);
    --open;
  }
};

namespace {

/// One connection: reads requests one at a time under their deadlines, hands each whole one to
/// the workers, writes the answer, then waits for the next. `Stream` is beast::tcp_stream or an
/// ssl_stream over one; `Derived` supplies stream() and how to close.
template <class Derived>
class Session {
 public:
  Session(HttpServer::Impl* server, std::string address, std::string remote)
      : server_(server), address_(std::move(address)), remote_(std::move(remote)) {}
  ~Session() { server_->release_connection(address_); }

 public:
  Derived& self() { return static_cast<Derived&>(*this); }
  beast::tcp_stream& socket() { return beast::get_lowest_layer(self().stream()); }
  const HttpServerOptions& options() const { return server_->options; }

  /// The first byte of the next request, within the idle timeout.
  void wait_request() {
    if (server_->stopping) return self().close();
    if (buffer_.size() > 0) return read_header();
    socket().expires_after(served_ == 0 ? options().header_timeout : options().idle_timeout);
    self().stream().async_read_some(buffer_.prepare(4096), [s = self().shared_from_this()](beast::error_code ec, std::size_t n) {
      if (ec) return s->close();
      s->buffer_.commit(n);
      s->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(options().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(options().max_body);
    socket().expires_after(options().header_timeout);
    http::async_read_header(self().stream(), buffer_, *parser_,
                            [s = self().shared_from_this()](beast::error_code ec, std::size_t) { s->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec == http::error::body_limit) return refuse_body();
    if (ec == http::error::header_limit) {
      return refuse(431, fmt::format("the request header is larger than {} bytes", options().max_header_bytes));
    }
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == asio::error::eof) return self().close();
    if (ec) return refuse(400, fmt::format("the request could not be read: {}", ec.message()));
    if (auto bad = refused_header(*parser_, options().max_body)) return refuse(bad->status, bad->why);
    header_fields_ = static_cast<std::size_t>(std::distance(parser_->get().begin(), parser_->get().end()));
    // Refused on its header (no credentials): the body is never read, so such a caller cannot
    // make the server hold --max-body bytes per connection.
    if (server_->admit) {
      if (auto refusal = server_->admit(head())) return refuse_with(std::move(*refusal));
    }
    if (iequals(sv(parser_->get()[http::field::expect]), "100-continue")) return send_continue();
    read_body();
  }

  /// curl and some Go clients wait (a second, by default) for "100 Continue" before a large body.
  void send_continue() {
    auto reply = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    socket().expires_after(options().write_timeout);
    http::async_write(self().stream(), *reply, [s = self().shared_from_this(), reply](beast::error_code ec, std::size_t) {
      if (ec) return s->close();
      s->read_body();
    });
  }

  void read_body() {
    socket().expires_after(options().body_timeout);
    http::async_read(self().stream(), buffer_, *parser_, [s = self().shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == http::error::body_limit) return s->refuse_body();
      if (ec) return s->close();
      s->dispatch();
    });
  }

  /// The request as its header says, without the body.
  [[nodiscard]] HttpRequest head() const {
    const auto& message = parser_->get();
    HttpRequest req;
    req.method = std::string(sv(message.method_string()));
    const std::string_view target = origin_form(sv(message.target()));
    const auto mark = target.find('?');
    req.path = std::string(target.substr(0, mark));
    if (mark != std::string_view::npos) req.query = std::string(target.substr(mark + 1));
    // The header block only: trailer fields (RFC 9110 §6.5.1) never count as headers (an
    // Authorization or Content-Encoding must not come from them). Chunked bodies, the only ones
    // with trailers, are refused anyway.
    std::size_t n = 0;
    for (const auto& field : message) {
      if (n++ == header_fields_) break;
      req.headers.emplace_back(std::string(sv(field.name_string())), std::string(sv(field.value())));
    }
    req.peer_name = peer_name_;
    req.remote = remote_;
    return req;
  }

  HttpRequest request() {
    HttpRequest req = head();
    auto message = parser_->release();
    req.body = std::move(message.body());
    keep_alive_ = message.keep_alive();
    return req;
  }

  /// The whole request to its handler: on this thread (one of the readers, on this connection's
  /// strand), or on a worker when the handler may wait, its answer then written from this strand.
  void dispatch() {
    socket().expires_never();  // a handler may take seconds
    auto req = std::make_shared<HttpRequest>(request());
    head_only_ = req->method == "HEAD";
    ++server_->handling;
    if (server_->stopping) {  // read after stop() began: not started, the connection closes after the answer
      keep_alive_ = false;
      return write(server_->refusal(503, req->path, "the server is stopping"), false, /*handled=*/true);
    }
    const auto* route = server_->find(*req);
    const bool gzip_it = options().gzip && accepts_gzip(req->header("Accept-Encoding"));
    if (route == nullptr || !route->may_wait) return write(server_->answer(*req, route), gzip_it, /*handled=*/true);
    if (route->async_handler) {
      asio::post(*server_->workers, [s = self().shared_from_this(), req, route, gzip_it] {
        HttpResponder respond = [s, gzip_it](HttpResponse res) {
          auto answer = std::make_shared<HttpResponse>(std::move(res));
          asio::post(s->socket().get_executor(), [s, answer, gzip_it] { s->write(std::move(*answer), gzip_it, /*handled=*/true); });
        };
        if (auto bad_body = s->server_->inflate(*req)) return respond(std::move(*bad_body));
        route->async_handler(*req, std::move(respond));
      });
      return;
    }
    asio::post(*server_->workers, [s = self().shared_from_this(), req, route, gzip_it] {
      auto res = std::make_shared<HttpResponse>(s->server_->answer(*req, route));
      asio::post(s->socket().get_executor(), [s, res, gzip_it] { s->write(std::move(*res), gzip_it, /*handled=*/true); });
    });
  }

  void refuse_body() { refuse(413, fmt::format("the body is larger than --max-body ({} bytes)", options().max_body)); }

  /// Refuses what the server itself cannot read, and closes: the rest of the stream is unknown.
  /// The caller may still be sending: what it sends is read and dropped for a while after the
  /// answer (a lingering close, as nginx does), so that it gets to read the answer.
  void refuse(int status, const std::string& why) {
    const std::string path = parser_ ? std::string(sv(parser_->get().target())) : "";  // set once the start line is read
    refuse_with(server_->refusal(status, path.substr(0, path.find('?')), why));
  }
  void refuse_with(HttpResponse res) {
    head_only_ = parser_ && parser_->is_header_done() && parser_->get().method() == http::verb::head;
    keep_alive_ = false;
    lingering_ = true;
    write(std::move(res), false);
  }

  /// `handled`: the answer of a dispatched request (counted in `handling` until written).
  void write(HttpResponse res, bool gzip_it, bool handled = false) {
    auto reply = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(res.status), 11);
    reply->set(http::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) reply->set(k, v);
    if (gzip_it && res.content_type.rfind("application/json", 0) == 0) {
      reply->set(http::field::content_encoding, "gzip");
      reply->body() = gzip(res.body);
    } else {
      reply->body() = std::move(res.body);
    }
    const bool again = keep_alive_ && ++served_ < options().keep_alive_requests && !server_->stopping;
    reply->keep_alive(again);
    reply->prepare_payload();
    if (head_only_) reply->body().clear();  // the GET's Content-Length, no body
    socket().expires_after(options().write_timeout);
    http::async_write(self().stream(), *reply, [s = self().shared_from_this(), reply, again, handled](beast::error_code ec, std::size_t) {
      if (handled) --s->server_->handling;
      if (!ec && s->lingering_) return s->linger(std::chrono::steady_clock::now() + kLinger);
      if (ec || !again) return s->close();
      s->wait_request();
    });
  }

  static constexpr auto kLinger = std::chrono::seconds(5);
  static constexpr std::size_t kLingerBytes = 32u << 20;

  /// Reads and drops until the caller closes, `until` passes or kLingerBytes are dropped; closes.
  void linger(std::chrono::steady_clock::time_point until) {
    beast::error_code ignored;
    socket().socket().shutdown(tcp::socket::shutdown_send, ignored);
    socket().expires_at(until);
    socket().async_read_some(asio::buffer(drain_), [s = self().shared_from_this(), until](beast::error_code ec, std::size_t n) {
      s->dropped_ += n;
      if (ec || s->dropped_ > kLingerBytes) return s->socket().close();
      s->linger(until);
    });
  }

  HttpServer::Impl* server_;  ///< outlives every connection (its io context owns them)
  std::string address_;       ///< the client's IP address, counted in server_->clients
  std::string remote_;        ///< address:port, for logs
  std::string peer_name_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool lingering_ = false;
  bool head_only_ = false;  ///< the request being answered is a HEAD
  std::size_t header_fields_ = 0;  ///< fields in the request's header block (before any trailer)
  std::size_t dropped_ = 0;  ///< bytes read and dropped after a refusal
  std::size_t served_ = 0;
  std::array<char, 16384> drain_{};
};

class PlainSession : public Session<PlainSession>, public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(HttpServer::Impl* server, tcp::socket socket, std::string address, std::string remote)
      : Session(server, std::move(address), std::move(remote)), stream_(std::move(socket)) {}
  beast::tcp_stream& stream() { return stream_; }
  void start() { wait_request(); }
  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

 private:
  friend class Session<PlainSession>;
  beast::tcp_stream stream_;
};

class TlsSession : public Session<TlsSession>, public std::enable_shared_from_this<TlsSession> {
 public:
  TlsSession(HttpServer::Impl* server, tcp::socket socket, asio::ssl::context& tls, std::string address, std::string remote)
      : Session(server, std::move(address), std::move(remote)), stream_(std::move(socket), tls) {}
  beast::ssl_stream<beast::tcp_stream>& stream() { return stream_; }
  void start() {
    socket().expires_after(options().header_timeout);
    stream_.async_handshake(asio::ssl::stream_base::server, [s = shared_from_this()](beast::error_code ec) {
      if (ec) return s->socket().close();
      s->peer_name_ = peer_common_name(s->stream_.native_handle());
      s->wait_request();
    });
  }
  void close() {
    socket().expires_after(std::chrono::seconds(1));
    stream_.async_shutdown([s = shared_from_this()](beast::error_code) { s->socket().close(); });
  }

 private:
  friend class Session<TlsSession>;
  beast::ssl_stream<beast::tcp_stream> stream_;
};

}  // namespace

Status HttpServer::Impl::make_tls() {
  if (options.tls.cert.empty() && options.tls.key.empty()) return Status::ok();
  if (Status st = check_tls_files(options.tls); !st.is_ok()) return st;  // the same words as the gRPC front's
  tls.emplace(asio::ssl::context::tls_server);
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                   asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
  beast::error_code ec;
  auto fail = [&](const std::string& what, const std::string& file) {
    return Status(Code::kInvalidArgument, fmt::format("{} {}: {}", what, file, ec.message()));
  };
  if (tls->use_certificate_chain_file(options.tls.cert, ec); ec) return fail("cannot use the certificate", options.tls.cert);
  tls->use_private_key_file(options.tls.key, asio::ssl::context::pem, ec);
  if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return Status(Code::kInvalidArgument, fmt::format("the key {} does not match the certificate {}", options.tls.key, options.tls.cert));
  }
  if (ec) return fail("cannot use the key", options.tls.key);
  if (!options.tls.client_ca.empty()) {
    if (tls->load_verify_file(options.tls.client_ca, ec); ec) return fail("cannot use the client CA", options.tls.client_ca);
    tls->set_verify_mode(options.tls.client_certificate_optional ? asio::ssl::verify_peer
                                                                 : asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  return Status::ok();
}

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [self = this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
    if (!ec) {
      self->open_session(std::move(socket));
      return self->accept();
    }
    // Out of file descriptors (or another accept error): the pending connection stays queued,
    // so accepting again at once would spin. Wait, then try again; say so once a minute.
    const auto now = std::chrono::steady_clock::now();
    if (now - self->accept_error_logged > std::chrono::minutes(1)) {
      self->accept_error_logged = now;
      spdlog::warn("http {}:{}: cannot accept connections: {} (open now: {}; raise the file limit or lower --http-max-connections)",
                   self->options.host, self->options.port, ec.message(), self->open.load());
    }
    self->accept_pause.expires_after(std::chrono::milliseconds(100));
    self->accept_pause.async_wait([self](beast::error_code wait) {
      if (!wait) self->accept();
    });
  });
}

void HttpServer::Impl::open_session(tcp::socket socket) {
  beast::error_code ignored;
  const auto peer = socket.remote_endpoint(ignored);
  std::string address = peer.address().to_string();
  // At a cap the connection is closed: the client retries; the connections already open keep working.
  if (!admit_connection(address)) {
    socket.close(ignored);
    return;
  }
  std::string remote = fmt::format("{}:{}", address, peer.port());
  socket.set_option(tcp::no_delay(true), ignored);  // small request, small answer: no Nagle wait
  if (tls) {
    std::make_shared<TlsSession>(this, std::move(socket), *tls, std::move(address), std::move(remote))->start();
  } else {
    std::make_shared<PlainSession>(this, std::move(socket), std::move(address), std::move(remote))->start();
  }
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(std::string method, std::string path, HttpHandler handler, bool may_wait) {
  impl_->routes.push_back({std::move(method), std::move(path), std::move(handler), may_wait, {}});
}
void HttpServer::route_async(std::string method, std::string path, HttpAsyncHandler handler) {
  impl_->routes.push_back({std::move(method), std::move(path), {}, /*may_wait=*/true, std::move(handler)});
}
void HttpServer::fallback(HttpHandler handler) { impl_->not_found = std::move(handler); }
void HttpServer::refusals(HttpRefusal refusal) { impl_->refusal = std::move(refusal); }
void HttpServer::admission(HttpAdmission admit) { impl_->admit = std::move(admit); }
std::size_t HttpServer::connections() const { return impl_->open.load(); }
std::uint64_t HttpServer::refused() const { return impl_->refused.load(); }

Result<int> HttpServer::start() {
  Impl& i = *impl_;
  if (Status st = i.make_tls(); !st.is_ok()) return st;
  beast::error_code ec;
  const auto address = asio::ip::make_address(i.options.host, ec);
  if (ec) return Status(Code::kInvalidArgument, fmt::format("cannot listen on {}: not an IP address", i.options.host));
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(i.options.port));
  auto failed = [&](const char* step) {
    return Status(Code::kInternal, fmt::format("cannot listen on {}:{}: {} ({})", i.options.host, i.options.port, ec.message(), step));
  };
  if (i.acceptor.open(endpoint.protocol(), ec); ec) return failed("socket");
  // SO_REUSEADDR alone: a restart may rebind while old connections sit in TIME_WAIT, but a second
  // server on a port already served fails to start (no SO_REUSEPORT sharing kube-scheduler's requests).
  i.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (i.acceptor.bind(endpoint, ec); ec) return failed("bind");
  if (i.acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) return failed("listen");
  i.workers.emplace(static_cast<std::size_t>(std::max(1, i.options.workers)));
  i.keep_running.emplace(i.io.get_executor());
  i.accept();
  for (int t = 0; t < std::max(1, i.options.io_threads); ++t) i.threads.emplace_back([&i] { i.io.run(); });
  return static_cast<int>(i.acceptor.local_endpoint().port());
}

void HttpServer::stop() {
  Impl& i = *impl_;
  if (i.threads.empty()) return;
  i.stopping = true;
  asio::post(i.accept_strand, [&i] {
    beast::error_code ignored;
    i.acceptor.close(ignored);
    i.accept_pause.cancel();
  });
  // The requests being handled finish and their answers are written (a Bind may wait for its
  // reservation pod), then every connection closes.
  while (i.handling.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  i.keep_running.reset();
  i.io.stop();
  for (auto& t : i.threads) t.join();
  i.threads.clear();
  i.workers->join();
}

}  // namespace fracpack::api
