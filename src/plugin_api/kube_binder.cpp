#include "plugin_api/kube_binder.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "plugin_api/flag_files.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

/// The API server's own words: its Status object's message, else the body.
std::string api_message(const httplib::Result& res) {
  if (!res) return httplib::to_string(res.error());
  const json status = json::parse(res->body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return fmt::format("HTTP {}: {}", res->status, status["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", res->status, res->body.substr(0, 512));
}

/// kInvalidArgument unless `url` is http(s)://host[:port] with a port in 1..65535.
Status check_url(const std::string& url) {
  auto bad = [&](const char* why) { return Status(Code::kInvalidArgument, fmt::format("--kube-api {}: {}", url, why)); };
  const bool https = url.rfind("https://", 0) == 0;
  if (!https && url.rfind("http://", 0) != 0) return bad("expected http(s)://host[:port]");
  const std::string rest = url.substr(https ? 8 : 7);
  if (rest.find('/') != std::string::npos) return bad("give the server only, without a path");
  if (rest.find_first_of("@?# \t") != std::string::npos) return bad("expected http(s)://host[:port], without credentials or a query");
  std::string host = rest;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    const auto close = rest.find(']');
    if (close == std::string::npos) return bad("an IPv6 address needs its closing ]");
    host = rest.substr(0, close + 1);
  } else if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
  }
  if (host.empty() || host == "[]") return bad("no host");
  if (host.size() < rest.size()) {
    const std::string port = rest.substr(host.size());
    int value = 0;
    if (port.size() < 2 || port[0] != ':' || port.find_first_not_of("0123456789", 1) != std::string::npos || port.size() > 6 ||
        (value = std::stoi(port.substr(1))) < 1 || value > 65535) {
      return bad("the port must be a number in 1..65535");
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<KubeBinder>> KubeBinder::open(const KubeApi& api) {
  if (Status st = check_url(api.url); !st.is_ok()) return st;
  std::string token;
  if (!api.token_file.empty()) {
    auto t = read_flag_file(api.token_file, "--kube-token");
    if (!t) return t.status();
    while (!t->empty() && (t->back() == '\n' || t->back() == '\r' || t->back() == ' ')) t->pop_back();
    if (t->empty()) return Status(Code::kInvalidArgument, fmt::format("--kube-token {}: the file is empty", api.token_file));
    token = std::move(*t);
  }
  if (!api.ca_file.empty()) {
    auto ca = read_flag_file(api.ca_file, "--kube-ca");
    if (!ca) return ca.status();
    if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return Status(Code::kInvalidArgument, fmt::format("--kube-ca {}: not a PEM certificate", api.ca_file));
    }
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

Status KubeBinder::bind(const BindAnswer& answer, const std::string& uid, bool* maybe_bound) {
  *maybe_bound = false;
  const auto slash = answer.pod.find('/');
  const std::string ns = slash == std::string::npos ? "default" : answer.pod.substr(0, slash);
  const std::string name = slash == std::string::npos ? answer.pod : answer.pod.substr(slash + 1);
  for (const std::string* part : {&ns, &name}) {  // DNS-1123 names: nothing to escape in a path
    if (part->empty() || part->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos) {
      return Status(Code::kInvalidArgument, fmt::format("pod {}: \"{}\" is not a Kubernetes object name (RFC 1123)", answer.pod, *part));
    }
  }
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!answer.annotations.empty()) metadata["annotations"] = answer.annotations;
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", metadata},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", answer.node}}}};
  const std::string pod_path = fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
  auto c = client();
  auto res = c->Post(pod_path + "/binding", binding.dump(), "application/json");
  Status st = Status::ok();
  if (!res || (res->status != 201 && res->status != 200)) {
    const std::string why = api_message(res);
    if (res && res->status == 409) {  // a retried Bind of a pod the API server already bound?
      auto pod = c->Get(pod_path);
      const json current = pod && pod->status == 200 ? json::parse(pod->body, nullptr, false) : json();
      static const json::json_pointer kNodeName("/spec/nodeName");
      if (current.is_object() && current.contains(kNodeName) && current[kNodeName] == answer.node) {
        give_back(std::move(c));
        return Status::ok();
      }
      st = Status(Code::kAlreadyExists, fmt::format("the API server refused to bind pod {} to node {}: {}", answer.pod, answer.node, why));
    } else if (res && res->status == 404) {
      st = Status(Code::kNotFound, fmt::format("the API server has no pod {}: {}", answer.pod, why));
    } else if (!res && res.error() == httplib::Error::Connection) {  // never sent: certainly not bound
      st = Status(Code::kInternal, fmt::format("cannot connect to the API server at {} to bind pod {}", api_.url, answer.pod));
    } else {
      st = Status(Code::kInternal, fmt::format("binding pod {} to node {} in the API server ({}): {}", answer.pod, answer.node, api_.url, why));
      *maybe_bound = true;  // sent, and no clear answer
    }
  }
  if (res) give_back(std::move(c));  // a connection that failed is not reused
  return st;
}

}  // namespace fracpack::api
