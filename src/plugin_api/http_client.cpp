// ExtenderClient over kube-scheduler's HTTP/JSON extender wire (what http_front.cpp serves).
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "plugin_api/client.hpp"
#include "plugin_api/json_text.hpp"
#include "plugin_api/on_demand.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;
namespace od = simdjson::ondemand;

/// cpp-httplib's error as a sentence: its own names are one word ("Connection").
std::string transport_error(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "cannot connect (connection refused, or no route to the host: is serve running there?)";
    case httplib::Error::ConnectionTimeout: return "connecting timed out";
    case httplib::Error::Read: return "the connection closed before an answer was read";
    case httplib::Error::Write: return "the connection closed while the request was sent";
    case httplib::Error::SSLConnection: return "the TLS handshake failed (a plaintext server, or a certificate it refused)";
    case httplib::Error::SSLLoadingCerts: return "cannot load the client certificate, key or CA";
    case httplib::Error::SSLServerVerification: return "the server's certificate is not signed by --tls-ca";
    default: return "HTTP client error: " + httplib::to_string(e);
  }
}

class HttpClient final : public ExtenderClient {
 public:
  HttpClient(const std::string& base_url, const ClientTls& tls) : http_(base_url, tls.cert, tls.key), base_url_(base_url) {
    if (!tls.ca.empty()) {
      http_.set_ca_cert_path(tls.ca.c_str());
      http_.enable_server_certificate_verification(true);
    }
    if (!tls.token.empty()) http_.set_bearer_token_auth(tls.token.c_str());
    http_.set_read_timeout(30, 0);
    http_.set_keep_alive(true);
    http_.set_tcp_nodelay(true);  // else each small request waits out a delayed ACK (~40 ms)
    // As kube-scheduler's Go client does: the server decides (serve --http-gzip).
    http_.set_default_headers({{"Accept-Encoding", "gzip"}});
  }

  Result<std::vector<std::string>> node_names() override {
    auto res = http_.Get("/snapshot");
    auto body = answer(res, "GET /snapshot");
    if (!body) return body.status();
    std::vector<std::string> names;
    if (body->contains("nodes")) {
      for (const auto& n : (*body)["nodes"]) names.push_back(n.value("name", std::string()));
    }
    return names;
  }

  /// The answer read with simdjson, not as a document: it lists up to every node sent, each
  /// failing one with its reason (kube-scheduler's ExtenderFilterResult).
  Result<FilterReply> filter(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    auto res = http_.Post("/filter", args(pod_json, nodes), "application/json");
    if (auto st = status_of(res, "POST /filter"); !st.is_ok()) return st;
    FilterReply reply;
    std::string error;
    const simdjson::error_code e = read_object(res->body, [&](std::string_view key, od::value& value) -> simdjson::error_code {
      if (key == "NodeNames") return read_strings(value, reply.node_names);
      if (key == "FailedNodes") return read_reasons(value, reply.failed_nodes);
      if (key == "FailedAndUnresolvableNodes") return read_reasons(value, reply.failed_and_unresolvable_nodes);
      if (key == "Error") return read_string(value, error);
      return simdjson::SUCCESS;
    });
    if (e) return Status(Code::kInternal, fmt::format("{} POST /filter: unexpected answer: {}", base_url_, simdjson::error_message(e)));
    if (!error.empty()) return Status(Code::kInvalidArgument, error);
    return reply;
  }

  Result<FilterReply> filter_all(const std::string&, int) override {
    return Status(Code::kInvalidArgument, "filter over all nodes is a gRPC feature; kube-scheduler's JSON wire sends NodeNames");
  }

  Result<std::vector<HostScore>> prioritize(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    auto res = http_.Post("/prioritize", args(pod_json, nodes), "application/json");
    if (auto st = status_of(res, "POST /prioritize"); !st.is_ok()) return st;
    std::vector<HostScore> scores;
    scores.reserve(nodes.size());
    const simdjson::error_code e = [&]() -> simdjson::error_code {  // kube-scheduler's HostPriorityList
      od::document doc;
      if (auto err = parser_.iterate(res->body, doc)) return err;
      od::array list;
      if (auto err = doc.get_array().get(list)) return err;
      for (auto item : list) {
        od::object hp;
        if (auto err = item.get_object().get(hp)) return err;
        HostScore s;
        std::string_view host;
        if (auto err = hp["Host"].get_string().get(host)) return err;
        if (auto err = hp["Score"].get_int64().get(s.score)) return err;
        s.host = host;
        scores.push_back(std::move(s));
      }
      return simdjson::SUCCESS;
    }();
    if (e) return Status(Code::kInternal, fmt::format("{} POST /prioritize: unexpected answer: {}", base_url_, simdjson::error_message(e)));
    return scores;
  }

  /// kube-scheduler's ExtenderBindingResult carries only an Error string: any refusal is
  /// kUnschedulable with the server's text.
  Status bind(const std::string& pod_namespace, const std::string& pod_name, const std::string& pod_uid,
              const std::string& node) override {
    const json request = {{"PodName", pod_name}, {"PodNamespace", pod_namespace}, {"PodUID", pod_uid}, {"Node", node}};
    auto body = post("/bind", request.dump());
    if (!body) return body.status();
    const auto error = body->value("Error", std::string());
    if (!error.empty()) return {Code::kUnschedulable, error};
    return Status::ok();
  }

 private:
  /// ExtenderArgs with NodeNames, built as text so the pod is not parsed and re-printed.
  static std::string args(const std::string& pod_json, const std::vector<std::string>& nodes) {
    std::string out = R"({"Pod":)";
    out += pod_json;
    out += R"(,"NodeNames":)";
    append_json_strings(out, nodes);
    out += '}';
    return out;
  }

  Status status_of(const httplib::Result& res, const std::string& what) const {
    if (!res) return Status(Code::kInternal, fmt::format("{} {}: {}", base_url_, what, transport_error(res.error())));
    if (res->status != 200) {
      return Status(res->status < 500 ? Code::kInvalidArgument : Code::kInternal,
                    fmt::format("{} {}: HTTP {}: {}", base_url_, what, res->status, res->body));
    }
    return Status::ok();
  }

  /// Calls `field(key, value)` for each field of the object `body`.
  template <class Field>
  simdjson::error_code read_object(const std::string& body, Field field) {
    od::document doc;
    if (auto e = parser_.iterate(body, doc)) return e;
    od::object object;
    if (auto e = doc.get_object().get(object)) return e;
    for (auto f : object) {
      std::string_view key;
      if (auto e = f.unescaped_key().get(key)) return e;
      od::value value;
      if (auto e = f.value().get(value)) return e;
      if (auto e = field(key, value)) return e;
    }
    return simdjson::SUCCESS;
  }

  static simdjson::error_code read_string(od::value& v, std::string& out) {
    if (v.is_null()) return simdjson::SUCCESS;
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    out = s;
    return simdjson::SUCCESS;
  }

  static simdjson::error_code read_strings(od::value& v, std::vector<std::string>& out) {
    if (v.is_null()) return simdjson::SUCCESS;
    od::array list;
    if (auto e = v.get_array().get(list)) return e;
    for (auto item : list) {
      std::string_view s;
      if (auto e = item.get_string().get(s)) return e;
      out.emplace_back(s);
    }
    return simdjson::SUCCESS;
  }

  static simdjson::error_code read_reasons(od::value& v, FilterReply::Reasons& out) {
    if (v.is_null()) return simdjson::SUCCESS;
    od::object map;
    if (auto e = v.get_object().get(map)) return e;
    SharedReason last;
    for (auto f : map) {
      std::string_view node;
      std::string_view why;
      if (auto e = f.unescaped_key().get(node)) return e;
      if (auto e = f.value().get_string().get(why)) return e;
      if (why != last.str()) last = SharedReason(std::string(why));
      out.emplace_back(node, last);
    }
    return simdjson::SUCCESS;
  }

  Result<json> post(const char* path, const std::string& body) {
    auto res = http_.Post(path, body, "application/json");
    return answer(res, std::string("POST ") + path);
  }

  Result<json> answer(const httplib::Result& res, const std::string& what) {
    if (auto st = status_of(res, what); !st.is_ok()) return st;
    json body = json::parse(res->body, nullptr, false);
    if (body.is_discarded()) return Status(Code::kInternal, fmt::format("{} {}: the answer is not JSON", base_url_, what));
    return body;
  }

  httplib::Client http_;
  std::string base_url_;
  OnDemandParser parser_;  ///< answers are read with it
};

}  // namespace

Result<std::unique_ptr<ExtenderClient>> connect_http(const std::string& base_url, const ClientTls& tls) {
  std::unique_ptr<ExtenderClient> client = std::make_unique<HttpClient>(base_url, tls);
  return client;
}

}  // namespace fracpack::api
