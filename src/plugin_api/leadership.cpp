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
    return Status(Code::kUnavailable,
                  fmt::format("fracpack replica {} is not the leader (Lease {}/{} is held by {}): the Service routes to the "
                              "leader, and kube-scheduler retries the pod",
                              o.identity, o.lease_namespace, o.lease_name, leader.empty() ? "nobody yet" : leader));
  }
  if (watch_ != nullptr && !watch_->resynced()) {
    return Status(Code::kUnavailable,
                  fmt::format("fracpack replica {} took the lead moments ago and is listing pods again before it binds; "
                              "kube-scheduler retries the pod",
                              o.identity));
  }
  return Status::ok();
}

Leadership::~Leadership() { stop(); }

void Leadership::start() {
  if (!pod_namespace_.empty()) labeller_ = std::thread([this] { run_labeller(); });
  want_label(false);  // a replica restarted in its old pod may still carry the label
  elector_.start();
}

void Leadership::stop() {
  elector_.stop();  // a leader releases the Lease, and asks for its label removed
  if (!labeller_.joinable()) return;
  {
    std::lock_guard lock(label_mu_);
    label_stopping_ = true;
  }
  label_wake_.notify_all();
  labeller_.join();
}

void Leadership::on_leading(bool leading) {
  if (watch_ != nullptr) watch_->new_term();  // what the term before decided is dropped: decided again from the ledger
  if (leading && watch_ != nullptr) {
    watch_->resync();  // before the elector lets a Bind through
    watch_->retry_pending_when_able();  // pods that failed while no replica led are tried again once it may act
  }
  want_label(leading);
}

void Leadership::want_label(bool leading) {
  if (pod_namespace_.empty()) return;
  {
    std::lock_guard lock(label_mu_);
    label_wanted_ = leading;
  }
  label_wake_.notify_all();
}

void Leadership::run_labeller() {
  std::unique_lock lock(label_mu_);
  for (;;) {
    label_wake_.wait(lock, [&] { return label_stopping_ || label_wanted_.has_value(); });
    // Stopping: one last try at what is wanted (a released leader's label removed), no retries.
    const bool last = label_stopping_;
    if (!label_wanted_) return;
    const bool leading = *label_wanted_;
    lock.unlock();
    const bool written = label(leading);
    lock.lock();
    if (written && label_wanted_ == leading) label_wanted_.reset();
    if (last) return;
    if (!written) label_wake_.wait_for(lock, elector_.options().retry_period, [&] { return label_stopping_; });
  }
}

bool Leadership::label(bool leading) {
  const auto& pod = elector_.options().identity;
  const nlohmann::json patch = {{"metadata", {{"labels", {{kLeaderLabel, leading ? nlohmann::json("true") : nlohmann::json()}}}}}};
  auto res = api_->client()->Patch(fmt::format("/api/v1/namespaces/{}/pods/{}", pod_namespace_, pod), patch.dump(),
                                   "application/merge-patch+json");
  if (res && res->status == 200) return true;
  if (res && res->status == 404) {  // no such pod (run outside one): nothing to label, nothing to retry
    spdlog::warn("leader election: pod {}/{} not found: {} not {}", pod_namespace_, pod, kLeaderLabel, leading ? "set" : "removed");
    return true;
  }
  spdlog::warn("leader election: could not {} label {} on pod {}/{} (retrying every {} ms): {}", leading ? "set" : "remove", kLeaderLabel,
               pod_namespace_, pod, elector_.options().retry_period.count(),
               res ? fmt::format("HTTP {}", res->status) : httplib::to_string(res.error()));
  return false;
}

}  // namespace fracpack::api
