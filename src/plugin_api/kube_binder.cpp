#include "plugin_api/kube_binder.hpp"

#include <algorithm>
#include <future>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fracpack/core/labels.hpp"
#include "plugin_api/kube_bind_pending.hpp"


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

KubeBinder::KubeBinder(std::shared_ptr<KubeConnection> connection)
    : connection_(std::move(connection)), pool_(std::make_unique<boost::asio::thread_pool>(4)) {}
KubeBinder::~KubeBinder() {
  pool_->join();  // Binds still waiting finish (their deadlines bound the wait)
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
  std::promise<std::pair<Status, bool>> outcome;
  auto future = outcome.get_future();
  bind_async(answer, uid, [&outcome](Status st, bool maybe) { outcome.set_value({std::move(st), maybe}); });
  auto [st, maybe] = future.get();
  *maybe_bound = maybe;
  return st;
}

void KubeBinder::bind_async(const BindAnswer& answer, const std::string& uid, BindDone done) {
  const auto slash = answer.pod.find('/');
  const std::string ns = slash == std::string::npos ? "default" : answer.pod.substr(0, slash);
  const std::string name = slash == std::string::npos ? answer.pod : answer.pod.substr(slash + 1);
  for (const std::string* part : {&ns, &name}) {  // DNS-1123 names: nothing to escape in a path
    if (part->empty() || part->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos) {
      return done(Status(Code::kInvalidArgument, fmt::format("pod {}: \"{}\" is not a Kubernetes object name (RFC 1123)", answer.pod, *part)),
                  false);
    }
  }
  auto p = std::make_shared<Pending>(answer, uid, std::move(done));
  p->annotations = answer.annotations;
  if (reservations_ != nullptr) {
    if (Status st = prepare_reservations(*p); !st.is_ok()) return fail(*p, std::move(st));
  }
  if (p->missing > 0) return await_reports(p);
  finish(p);
}

void KubeBinder::finish(const std::shared_ptr<Pending>& p) {
  try {
    if (!p->groups.empty()) {  // the reported GPUs, the ledger's indices and the groups go with the Binding
      auto devices_key = std::find_if(p->annotations.begin(), p->annotations.end(), [](const auto& a) { return a.first.ends_with(".gpus.devices"); });
      devices_key->second = fmt::format("{}", fmt::join(p->devices, ","));
      p->annotations[std::string(k8s::kLedgerGpusAnnotation)] = fmt::format("{}", fmt::join(p->answer.choice.gpus, ","));
      p->annotations[std::string(k8s::kGpuGroupsAnnotation)] = fmt::format("{}", fmt::join(p->groups, ","));
    }
    if (gate_) {
      if (Status st = gate_(); !st.is_ok()) return conclude(*p, std::move(st), false);  // the lead lost while the report was awaited
    }
    bool maybe_bound = false;
    bool answered = false;
    Idle conn = client();  // taken now, not held through the wait: a burst of waiting Binds opens no connection each
    bool ours = true;
    Status st = send_binding(p->answer, p->uid, p->annotations, p->groups, *conn.client, &maybe_bound, &answered, &ours);
    if (st.is_ok() && ours && !p->groups.empty()) {
      label_groups(p->answer.pod, p->groups);
      record_members(p->answer, p->uid);
    }
    if (answered) give_back(std::move(conn));  // a connection that failed is not reused
    conclude(*p, std::move(st), maybe_bound);
  } catch (const std::exception& e) {  // from a pool thread: an answer, never std::terminate
    conclude(*p, Status(Code::kInternal, fmt::format("binding pod {}: {}", p->answer.pod, e.what())), true);
  }
}

Status KubeBinder::send_binding(const BindAnswer& answer, const std::string& uid, const std::map<std::string, std::string>& annotations,
                                const std::vector<std::string>& groups, httplib::Client& c, bool* maybe_bound, bool* answered, bool* ours) {
  const auto slash = answer.pod.find('/');
  const std::string ns = slash == std::string::npos ? "default" : answer.pod.substr(0, slash);
  const std::string name = slash == std::string::npos ? answer.pod : answer.pod.substr(slash + 1);
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", metadata},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", answer.node}}}};
  const std::string pod_path = fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
  auto res = c.Post(pod_path + "/binding", binding.dump(), "application/json");
  *answered = static_cast<bool>(res);
  if (res && (res->status == 201 || res->status == 200)) return Status::ok();
  const std::string why = api_message(res);
  if (res && res->status == 409) {  // a retried Bind of a pod the API server already bound?
    auto pod = c.Get(pod_path);
    const json current = pod && pod->status == 200 ? json::parse(pod->body, nullptr, false) : json();
    static const json::json_pointer kNodeName("/spec/nodeName");
    if (current.is_object() && current.contains(kNodeName) && current[kNodeName] == answer.node) {
      // The first Bind may have died before it labelled and recorded the pod: done now, only if
      // that Binding was this one's (the same pod, the same groups), never from this Bind's claims.
      static const json::json_pointer kGroups("/metadata/annotations/fracpack.io~1gpu-groups");
      static const json::json_pointer kUid("/metadata/uid");
      *ours = groups.empty() || (current.value(kGroups, std::string()) == fmt::format("{}", fmt::join(groups, ",")) &&
                                 (uid.empty() || current.value(kUid, std::string()) == uid));
      if (!*ours) {
        spdlog::info("pod {}: bound to node {} already, by another Bind with other GPU groups; its labels and membership are "
                     "that Bind's", answer.pod, answer.node);
      }
      return Status::ok();
    }
    return Status(Code::kAlreadyExists, fmt::format("the API server refused to bind pod {} to node {}: {}", answer.pod, answer.node, why));
  }
  if (res && res->status == 404) return Status(Code::kNotFound, fmt::format("the API server has no pod {}: {}", answer.pod, why));
  if (!res && res.error() == httplib::Error::Connection) {  // never sent: certainly not bound
    return Status(Code::kInternal, fmt::format("cannot connect to the API server at {} to bind pod {}", connection_->url(), answer.pod));
  }
  *maybe_bound = true;  // sent, and no clear answer
  return Status(Code::kInternal, fmt::format("binding pod {} to node {} in the API server ({}): {}", answer.pod, answer.node, connection_->url(), why));
}

}  // namespace fracpack::api
