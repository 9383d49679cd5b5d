#include "plugin_api/kube_binder.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>


namespace fracpack::api {
using nlohmann::json;

std::string api_message(const httplib::Result& res) {
  if (!res) return httplib::to_string(res.error());
  const json status = json::parse(res->body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return fmt::format("HTTP {}: {}", res->status, status["message"].get<std::string>());
  }
  return fmt::format("HTTP {}: {}", res->status, res->body.substr(0, 512));
}

Result<std::unique_ptr<KubeBinder>> KubeBinder::open(const KubeApi& api) {
  auto connection = KubeConnection::open(api);
  if (!connection) return connection.status();
  return std::make_unique<KubeBinder>(std::move(*connection));
}

KubeBinder::KubeBinder(std::shared_ptr<KubeConnection> connection) : connection_(std::move(connection)) {}
KubeBinder::~KubeBinder() {
  {
    std::lock_guard lock(label_mu_);
    stopping_ = true;
  }
  label_wake_.notify_all();
  if (labeller_.joinable()) labeller_.join();  // the labels due are sent first
}

KubeBinder::Idle KubeBinder::client() {
  {
    std::lock_guard lock(mu_);
    // A pooled connection carries the token it was made with: one older than the token's re-read
    // period (KubeConnection) is dropped, so a rotated service-account token takes effect.
    const auto fresh = std::chrono::steady_clock::now() - std::chrono::seconds(50);
    std::erase_if(idle_, [&](const Idle& i) { return i.made < fresh; });
    if (!idle_.empty()) {
      Idle c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return {connection_->client(), std::chrono::steady_clock::now()};
}

void KubeBinder::give_back(Idle c) {
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
  Idle pooled = client();
  httplib::Client* c = pooled.client.get();
  std::map<std::string, std::string> annotations = answer.annotations;
  std::vector<std::string> groups;  // the fraction's GPU groups, for its label
  if (reservations_ != nullptr) {
    if (Status st = reserve(answer, annotations, groups, *c); !st.is_ok()) {
      give_back(std::move(pooled));
      return st;
    }
  }
  if (gate_) {
    if (Status st = gate_(); !st.is_ok()) {  // the lead lost while the reservation pod was awaited
      give_back(std::move(pooled));
      return st;
    }
  }
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", metadata},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", answer.node}}}};
  const std::string pod_path = fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
  auto res = c->Post(pod_path + "/binding", binding.dump(), "application/json");
  Status st = Status::ok();
  if (!res || (res->status != 201 && res->status != 200)) {
    const std::string why = api_message(res);
    if (res && res->status == 409) {  // a retried Bind of a pod the API server already bound?
      auto pod = c->Get(pod_path);
      const json current = pod && pod->status == 200 ? json::parse(pod->body, nullptr, false) : json();
      static const json::json_pointer kNodeName("/spec/nodeName");
      if (current.is_object() && current.contains(kNodeName) && current[kNodeName] == answer.node) {
        if (!groups.empty()) label_groups(answer.pod, groups);  // the first Bind may have died before it labelled
        give_back(std::move(pooled));
        return Status::ok();
      }
      st = Status(Code::kAlreadyExists, fmt::format("the API server refused to bind pod {} to node {}: {}", answer.pod, answer.node, why));
    } else if (res && res->status == 404) {
      st = Status(Code::kNotFound, fmt::format("the API server has no pod {}: {}", answer.pod, why));
    } else if (!res && res.error() == httplib::Error::Connection) {  // never sent: certainly not bound
      st = Status(Code::kInternal, fmt::format("cannot connect to the API server at {} to bind pod {}", connection_->url(), answer.pod));
    } else {
      st = Status(Code::kInternal, fmt::format("binding pod {} to node {} in the API server ({}): {}", answer.pod, answer.node, connection_->url(), why));
      *maybe_bound = true;  // sent, and no clear answer
    }
  }
  if (st.is_ok() && !groups.empty()) label_groups(answer.pod, groups);
  if (res) give_back(std::move(pooled));  // a connection that failed is not reused
  return st;
}

}  // namespace fracpack::api
