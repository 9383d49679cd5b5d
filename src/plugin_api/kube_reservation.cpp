// The binder's reservation step (gpu_reservations.hpp), as KAI's binder takes it before binding a
// fraction (pkg/binder/binding/binder.go reserveGPUs, then the pod's GPU-group label).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/decode.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/reservation_book.hpp"

namespace fracpack::api {

using nlohmann::json;

Status KubeBinder::create_reservation(const ReservationClaim& claim, httplib::Client& c) {
  const GpuReservationOptions& options = reservations_->options();
  auto res = c.Post(fmt::format("/api/v1/namespaces/{}/pods", options.ns), reservation_pod(options, claim).dump(), "application/json");
  if (res && (res->status == 201 || res->status == 200)) {
    spdlog::info("reservation pod {}/{} created on node {} for its GPU {} (group {})", options.ns, claim.pod, claim.node, claim.gpu,
                 claim.group);
    return Status::ok();
  }
  return Status(Code::kInternal, fmt::format("cannot create reservation pod {}/{} on node {}: {}", options.ns, claim.pod,
                                             claim.node, api_message(res)));
}

Status KubeBinder::reserve(const BindAnswer& answer, std::map<std::string, std::string>& annotations, std::vector<std::string>& groups,
                           httplib::Client& c) {
  auto devices_key = std::find_if(annotations.begin(), annotations.end(), [](const auto& a) { return a.first.ends_with(".gpus.devices"); });
  if (devices_key == annotations.end() || answer.choice.gpus.empty()) return Status::ok();  // not a fraction
  if (answer.joins_unreserved) {
    spdlog::warn("pod {}: joins GPU {} of node {}, whose fractions run without a reservation pod; bound by the ledger's index, "
                 "not held at the kubelet until they go",
                 answer.pod, fmt::join(answer.choice.gpus, ","), answer.node);
    return Status::ok();
  }
  std::vector<ReservationClaim> claims;
  std::vector<bool> created;
  auto give_up = [&](Status st) {
    for (std::size_t i = 0; i < claims.size(); ++i) reservations_->failed(claims[i], created[i]);
    spdlog::warn("pod {}: {}", answer.pod, st.message());
    return st;
  };
  for (int gpu : answer.choice.gpus) {
    claims.push_back(reservations_->claim(answer.node, gpu));
    created.push_back(false);
    if (!claims.back().create) continue;
    if (Status st = create_reservation(claims.back(), c); !st.is_ok()) return give_up(st);
    created.back() = true;
  }
  const auto deadline = std::chrono::steady_clock::now() + reservations_->options().timeout;
  std::vector<std::string> devices;
  for (const ReservationClaim& claim : claims) {
    auto device = claim.device.empty() ? reservations_->await_device(claim.group, deadline) : Result<std::string>(claim.device);
    if (!device) return give_up(device.status());
    devices.push_back(*device);
  }
  devices_key->second = fmt::format("{}", fmt::join(devices, ","));
  annotations[std::string(k8s::kLedgerGpusAnnotation)] = fmt::format("{}", fmt::join(answer.choice.gpus, ","));
  for (const auto& claim : claims) groups.push_back(claim.group);
  annotations[std::string(kGpuGroupsAnnotation)] = fmt::format("{}", fmt::join(groups, ","));
  return Status::ok();
}

void KubeBinder::label_groups(const std::string& pod, const std::vector<std::string>& groups) {
  {
    std::lock_guard lock(label_mu_);
    labels_due_.emplace_back(pod, groups);
    if (!labeller_.joinable()) labeller_ = std::thread([this] { label_loop(); });
  }
  label_wake_.notify_one();
}

void KubeBinder::label_loop() {
  auto c = connection_->client();
  std::unique_lock lock(label_mu_);
  for (;;) {
    label_wake_.wait(lock, [&] { return stopping_ || !labels_due_.empty(); });
    if (labels_due_.empty()) return;  // stopping, and every label sent
    auto [pod, groups] = std::move(labels_due_.front());
    labels_due_.pop_front();
    lock.unlock();
    json labels = json::object();
    if (groups.size() == 1) {
      labels[std::string(kGpuGroupLabel)] = groups.front();
    } else {
      for (const auto& group : groups) labels[std::string(kGpuGroupLabelPrefix) + group] = group;
    }
    const auto slash = pod.find('/');
    const json patch = {{"metadata", {{"labels", labels}}}};
    auto res = c->Patch(fmt::format("/api/v1/namespaces/{}/pods/{}", pod.substr(0, slash), pod.substr(slash + 1)), patch.dump(),
                        "application/merge-patch+json");
    if (!res || res->status != 200) {
      // Bound all the same: fracpack.io/gpu-groups keeps the link; KAI would not see the group.
      spdlog::warn("pod {}: bound, but not labelled with its GPU group {}: {}", pod, fmt::join(groups, ","), api_message(res));
      if (!res) c = connection_->client();
    }
    lock.lock();
  }
}

}  // namespace fracpack::api
