#include "plugin_api/kube_binder.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace fracpack::api {
namespace {

using nlohmann::json;

Result<std::string> read_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return Status(Code::kInvalidArgument, fmt::format("{} {}: cannot be read", what, path));
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

/// The API server's own words: its Status object's message, else the body.
std::string api_message(const httplib::Result& res) {
  if (!res) return httplib::to_string(res.error());
  const json status = json::parse(res->body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return fmt::format("HTTP {}: {}", res->status, status["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", res->status, res->body.substr(0, 512));
}

}  // namespace

Result<std::unique_ptr<KubeBinder>> KubeBinder::open(const KubeApi& api) {
  const bool https = api.url.rfind("https://", 0) == 0;
  if (!https && api.url.rfind("http://", 0) != 0) {
    return Status(Code::kInvalidArgument, fmt::format("--kube-api {}: expected http(s)://host[:port]", api.url));
  }
  if (api.url.find('/', https ? 8 : 7) != std::string::npos) {
    return Status(Code::kInvalidArgument, fmt::format("--kube-api {}: give the server only, without a path", api.url));
  }
  std::string token;
  if (!api.token_file.empty()) {
    auto t = read_file(api.token_file, "--kube-token");
    if (!t) return t.status();
    token = std::move(*t);
  }
  if (!api.ca_file.empty()) {
    if (auto ca = read_file(api.ca_file, "--kube-ca"); !ca) return ca.status();
  }
  return std::unique_ptr<KubeBinder>(new KubeBinder(api, std::move(token)));
}

KubeBinder::KubeBinder(KubeApi api, std::string token) : api_(std::move(api)), token_(std::move(token)) {}
KubeBinder::~KubeBinder() = default;

std::unique_ptr<httplib::Client> KubeBinder::client() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<httplib::Client>(api_.url);
  c->set_keep_alive(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(10, 0);
  if (!api_.ca_file.empty()) c->set_ca_cert_path(api_.ca_file.c_str());
  if (!token_.empty()) c->set_bearer_token_auth(token_.c_str());
  return c;
}

void KubeBinder::give_back(std::unique_ptr<httplib::Client> c) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(c));
}

Status KubeBinder::bind(const BindAnswer& answer, const std::string& uid) {
  const auto slash = answer.pod.find('/');
  const std::string ns = slash == std::string::npos ? "default" : answer.pod.substr(0, slash);
  const std::string name = slash == std::string::npos ? answer.pod : answer.pod.substr(slash + 1);
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!answer.annotations.empty()) metadata["annotations"] = answer.annotations;
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", metadata},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", answer.node}}}};
  for (const std::string* part : {&ns, &name}) {  // DNS-1123 names: nothing to escape in a path
    if (part->empty() || part->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos) {
      return Status(Code::kInvalidArgument, fmt::format("pod {}: \"{}\" is not a Kubernetes object name (RFC 1123)", answer.pod, *part));
    }
  }
  const std::string pod_path = fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
  auto c = client();
  auto res = c->Post(pod_path + "/binding", binding.dump(), "application/json");
  Status st = Status::ok();
  if (!res || (res->status != 201 && res->status != 200)) {
    const std::string why = api_message(res);
    if (res && res->status == 409) {  // a retried Bind of a pod the API server already bound?
      auto pod = c->Get(pod_path);
      const json current = pod && pod->status == 200 ? json::parse(pod->body, nullptr, false) : json();
      const json* node = current.is_object() && current.contains("spec") && current["spec"].is_object() && current["spec"].contains("nodeName")
                             ? &current["spec"]["nodeName"]
                             : nullptr;
      if (node != nullptr && node->is_string() && node->get<std::string>() == answer.node) {
        give_back(std::move(c));
        return Status::ok();
      }
      st = Status(Code::kAlreadyExists, fmt::format("the API server refused to bind pod {} to node {}: {}", answer.pod, answer.node, why));
    } else if (res && res->status == 404) {
      st = Status(Code::kNotFound, fmt::format("the API server has no pod {}: {}", answer.pod, why));
    } else {
      st = Status(Code::kInternal, fmt::format("binding pod {} to node {} in the API server ({}): {}", answer.pod, answer.node, api_.url, why));
    }
  }
  if (res) give_back(std::move(c));  // a connection that failed is not reused
  return st;
}

}  // namespace fracpack::api
