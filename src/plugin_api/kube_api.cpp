#include "plugin_api/kube_api.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <httplib.h>

#include "plugin_api/flag_files.hpp"

namespace fracpack::api {
namespace {

constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/";

Result<std::string> read_token(const std::string& path) {
  auto t = read_flag_file(path, "--kube-token");
  if (!t) return t.status();
  while (!t->empty() && (t->back() == '\n' || t->back() == '\r' || t->back() == ' ')) t->pop_back();
  if (t->empty()) return Status(Code::kInvalidArgument, fmt::format("--kube-token {}: the file is empty", path));
  return t;
}

}  // namespace

Status check_api_url(const std::string& url) {
  auto bad = [&](const char* why) { return Status(Code::kInvalidArgument, fmt::format("--kube-api {}: {}", url, why)); };
  const bool https = url.rfind("https://", 0) == 0;
  if (!https && url.rfind("http://", 0) != 0) return bad("expected http(s)://host[:port], or in-cluster");
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

Result<std::shared_ptr<KubeConnection>> KubeConnection::open(KubeApi api) {
  if (api.url == "in-cluster") {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || port == nullptr || *host == '\0') {
      return Status(Code::kInvalidArgument,
                    "--kube-api in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod?); "
                    "give the API server's URL");
    }
    const std::string h = host;
    api.url = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
    if (api.token_file.empty()) api.token_file = std::string(kServiceAccount) + "token";
    if (api.ca_file.empty()) api.ca_file = std::string(kServiceAccount) + "ca.crt";
  }
  if (Status st = check_api_url(api.url); !st.is_ok()) return st;
  std::string token;
  if (!api.token_file.empty()) {
    auto t = read_token(api.token_file);
    if (!t) return t.status();
    token = std::move(*t);
  }
  if (!api.ca_file.empty()) {
    auto ca = read_flag_file(api.ca_file, "--kube-ca");
    if (!ca) return ca.status();
    if (ca->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return Status(Code::kInvalidArgument, fmt::format("--kube-ca {}: not a PEM certificate", api.ca_file));
    }
  }
  return std::shared_ptr<KubeConnection>(new KubeConnection(std::move(api), std::move(token)));
}

std::string KubeConnection::token() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!api_.token_file.empty() && now - token_read_ > std::chrono::minutes(1)) {
    if (auto t = read_token(api_.token_file)) token_ = std::move(*t);  // unreadable for a moment: keep the last one
    token_read_ = now;
  }
  return token_;
}

std::unique_ptr<httplib::Client> KubeConnection::client(std::chrono::seconds read_timeout) {
  auto c = std::make_unique<httplib::Client>(api_.url);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(read_timeout);
  if (!api_.ca_file.empty()) c->set_ca_cert_path(api_.ca_file.c_str());
  if (const std::string t = token(); !t.empty()) c->set_bearer_token_auth(t.c_str());
  return c;
}

}  // namespace fracpack::api
