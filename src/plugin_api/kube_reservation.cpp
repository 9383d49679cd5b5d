// The binder's reservation step (gpu_reservations.hpp), as KAI's binder takes it before binding a
// fraction (pkg/binder/binding/binder.go reserveGPUs, then the pod's GPU-group label).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fracpack/core/labels.hpp"
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
  const std::vector<ReservationClaim>& claims = answer.reservations;
  if (claims.empty()) return Status::ok();
  auto give_up = [&](Status st) {
    spdlog::warn("pod {}: {}", answer.pod, st.message());
    return st;  // the caller releases the pod's GPUs: reservation pods no fraction holds then go
  };
  for (const ReservationClaim& claim : claims) {
    if (!claim.create) continue;
    if (Status st = create_reservation(claim, c); !st.is_ok()) {
      reservations_->creation_failed(claim);
      return give_up(st);
    }
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
  annotations[std::string(k8s::kGpuGroupsAnnotation)] = fmt::format("{}", fmt::join(groups, ","));
  return Status::ok();
}

void KubeBinder::label_groups(const std::string& pod, const std::vector<std::string>& groups) {
  constexpr std::size_t kMostDue = 100'000;  // an API server down for long: the oldest labels give way
  {
    std::lock_guard lock(label_mu_);
    if (labels_due_.size() >= kMostDue) {
      spdlog::warn("pod {}: not labelled with its GPU group (too many labels due); fracpack.io/gpu-groups keeps it",
                   labels_due_.front().pod);
      labels_due_.pop_front();
    }
    labels_due_.push_back({pod, groups, 0, std::chrono::steady_clock::now()});
    if (!labeller_.joinable()) labeller_ = std::thread([this] { label_loop(); });
  }
  label_wake_.notify_one();
}

bool KubeBinder::send_label(const DueLabel& due, std::unique_ptr<httplib::Client>& c) {
  json labels = json::object();
  if (due.groups.size() == 1) {
    labels[std::string(kGpuGroupLabel)] = due.groups.front();
  } else {
    for (const auto& group : due.groups) labels[std::string(kGpuGroupLabelPrefix) + group] = group;
  }
  const auto slash = due.pod.find('/');
  const json patch = {{"metadata", {{"labels", labels}}}};
  auto res = c->Patch(fmt::format("/api/v1/namespaces/{}/pods/{}", due.pod.substr(0, slash), due.pod.substr(slash + 1)), patch.dump(),
                      "application/merge-patch+json");
  if (res && (res->status == 200 || res->status == 404)) return true;  // labelled, or gone
  spdlog::warn("pod {}: bound, but not labelled with its GPU group {} yet: {}", due.pod, fmt::join(due.groups, ","), api_message(res));
  if (!res) c = connection_->client();
  return false;
}

void KubeBinder::label_loop() {
  constexpr int kAttempts = 6;  // over ~1 minute; fracpack.io/gpu-groups keeps the link regardless
  auto c = connection_->client();
  std::unique_lock lock(label_mu_);
  for (;;) {
    label_wake_.wait(lock, [&] { return stopping_ || !labels_due_.empty(); });
    if (labels_due_.empty()) return;  // stopping, and every label sent
    if (!stopping_ && labels_due_.front().not_before > std::chrono::steady_clock::now()) {
      label_wake_.wait_until(lock, labels_due_.front().not_before, [&] { return stopping_; });
      continue;
    }
    DueLabel due = std::move(labels_due_.front());
    labels_due_.pop_front();
    lock.unlock();
    const bool sent = send_label(due, c);
    lock.lock();
    if (!sent && !stopping_ && ++due.attempts < kAttempts) {
      due.not_before = std::chrono::steady_clock::now() + std::chrono::seconds(1 << due.attempts);
      labels_due_.push_back(std::move(due));
    }
  }
}

}  // namespace fracpack::api
