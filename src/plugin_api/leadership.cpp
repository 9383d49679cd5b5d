#include "plugin_api/leadership.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace fracpack::api {

Leadership::Leadership(std::shared_ptr<KubeConnection> api, LeaderElectionOptions options, std::string pod_namespace)
    : api_(api), pod_namespace_(std::move(pod_namespace)), elector_(api, std::move(options), [this](bool leading) { on_leading(leading); }) {}

Status Leadership::may_act() const {
  const auto& o = elector_.options();
  if (!elector_.leading()) {
    const std::string leader = elector_.leader();
    return Status(Code::kFailedPrecondition,
                  fmt::format("fracpack replica {} is not the leader (Lease {}/{} is held by {}): the Service routes to the "
                              "leader, and kube-scheduler retries the pod",
                              o.identity, o.lease_namespace, o.lease_name, leader.empty() ? "nobody yet" : leader));
  }
  if (watch_ != nullptr && !watch_->resynced()) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("fracpack replica {} took the lead moments ago and is listing pods again before it binds; "
                              "kube-scheduler retries the pod",
                              o.identity));
  }
  return Status::ok();
}

void Leadership::start() {
  label(false);  // a replica restarted in its old pod may still carry the label
  elector_.start();
}

void Leadership::stop() { elector_.stop(); }

void Leadership::on_leading(bool leading) {
  if (leading && watch_ != nullptr) watch_->resync();
  label(leading);
}

void Leadership::label(bool leading) {
  if (pod_namespace_.empty()) return;
  const auto& pod = elector_.options().identity;
  const nlohmann::json patch = {{"metadata", {{"labels", {{kLeaderLabel, leading ? nlohmann::json("true") : nlohmann::json()}}}}}};
  auto res = api_->client()->Patch(fmt::format("/api/v1/namespaces/{}/pods/{}", pod_namespace_, pod), patch.dump(),
                                   "application/merge-patch+json");
  if (!res || res->status != 200) {
    spdlog::warn("leader election: could not {} label {} on pod {}/{}: {}", leading ? "set" : "remove", kLeaderLabel, pod_namespace_, pod,
                 res ? fmt::format("HTTP {}", res->status) : httplib::to_string(res.error()));
  }
}

}  // namespace fracpack::api
