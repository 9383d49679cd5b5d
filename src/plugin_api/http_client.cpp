// ExtenderClient over kube-scheduler's HTTP/JSON extender wire (what http_front.cpp serves).
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "plugin_api/client.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

class HttpClient final : public ExtenderClient {
 public:
  explicit HttpClient(const std::string& base_url) : http_(base_url), base_url_(base_url) {
    http_.set_read_timeout(30, 0);
    http_.set_keep_alive(true);
    http_.set_tcp_nodelay(true);  // else each small request waits out a delayed ACK (~40 ms)
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

  Result<FilterReply> filter(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    auto body = post("/filter", args(pod_json, nodes));
    if (!body) return body.status();
    FilterReply reply;
    try {
      if ((*body)["Error"].is_string() && !(*body)["Error"].get<std::string>().empty()) {
        return Status(Code::kInvalidArgument, (*body)["Error"].get<std::string>());
      }
      if ((*body)["NodeNames"].is_array()) reply.node_names = (*body)["NodeNames"].get<std::vector<std::string>>();
      if ((*body)["FailedNodes"].is_object()) reply.failed_nodes = (*body)["FailedNodes"].get<std::map<std::string, std::string>>();
      if ((*body)["FailedAndUnresolvableNodes"].is_object()) {
        reply.failed_and_unresolvable_nodes = (*body)["FailedAndUnresolvableNodes"].get<std::map<std::string, std::string>>();
      }
    } catch (const json::exception& e) {
      return Status(Code::kInternal, fmt::format("/filter: unexpected answer: {}", e.what()));
    }
    return reply;
  }

  Result<FilterReply> filter_all(const std::string&, int) override {
    return Status(Code::kInvalidArgument, "filter over all nodes is a gRPC feature; kube-scheduler's JSON wire sends NodeNames");
  }

  Result<std::vector<HostScore>> prioritize(const std::string& pod_json, const std::vector<std::string>& nodes) override {
    auto body = post("/prioritize", args(pod_json, nodes));
    if (!body) return body.status();
    std::vector<HostScore> scores;
    try {
      for (const auto& hp : *body) scores.push_back({hp.at("Host").get<std::string>(), hp.at("Score").get<std::int64_t>()});
    } catch (const json::exception& e) {
      return Status(Code::kInternal, fmt::format("/prioritize: unexpected answer: {}", e.what()));
    }
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
    out += json(nodes).dump();
    out += '}';
    return out;
  }

  Result<json> post(const char* path, const std::string& body) {
    auto res = http_.Post(path, body, "application/json");
    return answer(res, std::string("POST ") + path);
  }

  Result<json> answer(const httplib::Result& res, const std::string& what) {
    if (!res) return Status(Code::kInternal, fmt::format("{} {}: {}", base_url_, what, httplib::to_string(res.error())));
    if (res->status != 200) {
      return Status(res->status < 500 ? Code::kInvalidArgument : Code::kInternal,
                    fmt::format("{} {}: HTTP {}: {}", base_url_, what, res->status, res->body));
    }
    json body = json::parse(res->body, nullptr, false);
    if (body.is_discarded()) return Status(Code::kInternal, fmt::format("{} {}: the answer is not JSON", base_url_, what));
    return body;
  }

  httplib::Client http_;
  std::string base_url_;
};

}  // namespace

Result<std::unique_ptr<ExtenderClient>> connect_http(const std::string& base_url) {
  std::unique_ptr<ExtenderClient> client = std::make_unique<HttpClient>(base_url);
  return client;
}

}  // namespace fracpack::api
