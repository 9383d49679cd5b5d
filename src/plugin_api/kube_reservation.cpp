// The binder's reservation step (gpu_reservations.hpp), as KAI's binder takes it before binding a
// fraction (pkg/binder/binding/binder.go reserveGPUs, then the pod's GPU-group label).
#include <algorithm>

#include <boost/asio/post.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fracpack/core/labels.hpp"
#include "fracpack/k8s/decode.hpp"
#include "plugin_api/kube_bind_pending.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/reservation_book.hpp"

namespace fracpack::api {

using nlohmann::json;

Status KubeBinder::create_reservation(const ReservationClaim& claim, httplib::Client& c) {
  const GpuReservationOptions& options = reservations_->options();
  auto res = c.Post(fmt::format("/api/v1/namespaces/{}/pods", options.ns), reservation_pod(options, claim).dump(), "application/json");
  bool created = res && (res->status == 201 || res->status == 200);
  if (!created && (!res || res->status >= 500)) {  // no clear answer: it may exist all the same
    auto check = c.Get(fmt::format("/api/v1/namespaces/{}/pods/{}", options.ns, claim.pod));
    created = check && check->status == 200;
  }
  if (created) {
    spdlog::info("reservation pod {}/{} created on node {} for its GPU {} (group {})", options.ns, claim.pod, claim.node, claim.gpu,
                 claim.group);
    return Status::ok();
  }
  return Status(Code::kInternal, fmt::format("cannot create reservation pod {}/{} on node {}: {}", options.ns, claim.pod,
                                             claim.node, api_message(res)));
}

Status KubeBinder::prepare_reservations(Pending& p) {
  const BindAnswer& answer = p.answer;
  const bool fraction = std::any_of(p.annotations.begin(), p.annotations.end(), [](const auto& a) { return a.first.ends_with(".gpus.devices"); });
  if (!fraction || answer.choice.gpus.empty()) return Status::ok();
  if (answer.joins_unreserved) {
    spdlog::warn("pod {}: joins GPU {} of node {}, whose fractions run without a reservation pod; bound by the ledger's index, "
                 "not held at the kubelet until they go",
                 answer.pod, fmt::join(answer.choice.gpus, ","), answer.node);
    return Status::ok();
  }
  const std::vector<ReservationClaim>& claims = answer.reservations;
  if (claims.empty()) return Status::ok();
  // A Bind that must wait for a report takes a waiting slot first, before it creates anything.
  const bool waits = std::any_of(claims.begin(), claims.end(), [](const ReservationClaim& c) { return c.device.empty(); });
  auto give_up_from = [&](std::size_t first) {  // claims that were to create a pod and did not: their groups go
    for (std::size_t i = first; i < claims.size(); ++i) {
      if (claims[i].create) reservations_->creation_failed(claims[i]);
    }
  };
  if (waits) {
    std::size_t now = waiting_.load();
    do {
      if (now >= most_waiting_) {
        give_up_from(0);
        refused_at_cap(answer.pod);
        p.said = true;  // refused_at_cap logs it, at most every 10 s
        return Status(Code::kUnavailable, fmt::format("{} Binds already wait for reservation pods to report their GPUs "
                                                      "(--max-waiting-binds); fracpack nudges the pod for kube-scheduler to "
                                                      "retry it when one of them ends",
                                                      most_waiting_));
      }
    } while (!waiting_.compare_exchange_weak(now, now + 1));
    p.slot = &waiting_;
  }
  for (std::size_t i = 0; i < claims.size(); ++i) {
    if (!claims[i].create) continue;
    Idle conn = client();
    Status st = create_reservation(claims[i], *conn.client);
    give_back(std::move(conn));
    if (!st.is_ok()) {
      give_up_from(i);
      return st;
    }
  }
  for (const ReservationClaim& claim : claims) {
    p.groups.push_back(claim.group);
    p.devices.push_back(claim.device);
    if (claim.device.empty()) ++p.missing;
  }
  return Status::ok();
}

void KubeBinder::await_reports(const std::shared_ptr<Pending>& p) {
  p->strand.emplace(boost::asio::make_strand(pool_->get_executor()));
  p->deadline = std::make_unique<boost::asio::steady_timer>(*p->strand, reservations_->options().timeout);
  std::lock_guard lock(p->mu);  // every waiter registered, and the deadline armed, before any report is taken
  for (std::size_t i = 0; i < p->devices.size(); ++i) {
    if (!p->devices[i].empty()) continue;
    // The book calls back under its lock, from the watch's thread: the rest runs on the pool.
    p->waiters.push_back(reservations_->when_reported(p->groups[i], [this, p, i](Result<std::string> device) {
      boost::asio::post(*pool_, [this, p, i, device = std::move(device)]() mutable { reported(p, i, std::move(device)); });
    }));
  }
  boost::asio::post(*p->strand, [this, p] {  // the timer is touched on its strand only
    p->deadline->async_wait([this, p](const boost::system::error_code& cancelled) {
      if (!cancelled) expired(p);
    });
  });
}

void KubeBinder::expired(const std::shared_ptr<Pending>& p) {
  std::unique_lock lock(p->mu);
  if (p->over) return;
  p->over = true;
  std::string late;
  for (std::size_t i = 0; i < p->devices.size() && late.empty(); ++i) {
    if (p->devices[i].empty()) late = p->groups[i];
  }
  lock.unlock();
  fail(*p, reservations_->report_timeout(late));
}

void KubeBinder::reported(const std::shared_ptr<Pending>& p, std::size_t i, Result<std::string> device) {
  std::unique_lock lock(p->mu);
  if (p->over) return;
  if (!device) {
    p->over = true;
    p->cancel_deadline();
    lock.unlock();
    return fail(*p, device.status());
  }
  if (!p->devices[i].empty()) return;  // said twice
  p->devices[i] = std::move(*device);
  if (--p->missing > 0) return;
  p->over = true;
  p->cancel_deadline();
  lock.unlock();
  finish(p);
}

void KubeBinder::refused_at_cap(const std::string& pod) {
  constexpr std::size_t kMostRemembered = 4096;
  constexpr std::chrono::seconds kSayEvery{10};
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(capped_mu_);
  if (std::find(capped_.begin(), capped_.end(), pod) == capped_.end()) capped_.push_back(pod);
  if (capped_.size() > kMostRemembered) capped_.pop_front();
  ++capped_unsaid_;
  if (now - capped_said_ < kSayEvery) return;
  spdlog::warn("{} Bind(s) refused since the last warning, pod {} the latest: {} Binds already wait for reservation pods to report "
               "their GPUs (--max-waiting-binds). Each is nudged for kube-scheduler to retry it when a waiting Bind ends; if "
               "this repeats, reservation pods start slowly (their image, the node) or --max-waiting-binds is low for the bursts",
               capped_unsaid_, pod, most_waiting_);
  capped_said_ = now;
  capped_unsaid_ = 0;
}

void KubeBinder::on_slot_freed(std::function<void(const std::vector<std::string>& pods)> retry) {
  std::lock_guard lock(capped_mu_);
  slot_freed_ = std::move(retry);
}

void KubeBinder::slot_given_back() {
  std::string pod;
  std::function<void(const std::vector<std::string>&)> retry;
  {
    std::lock_guard lock(capped_mu_);
    if (capped_.empty() || !slot_freed_) return;
    pod = std::move(capped_.front());
    capped_.pop_front();
    retry = slot_freed_;
  }
  retry({pod});
}

void KubeBinder::fail(Pending& p, Status st) {
  if (!p.said) spdlog::warn("pod {}: {}", p.answer.pod, st.message());
  conclude(p, std::move(st), false);
}

void KubeBinder::conclude(Pending& p, Status st, bool maybe_bound) {
  std::vector<std::uint64_t> waiters;
  BindDone done;
  bool freed = false;
  {
    std::lock_guard lock(p.mu);
    p.over = true;
    waiters = std::exchange(p.waiters, {});
    if (p.slot != nullptr) {
      --*p.slot;
      p.slot = nullptr;
      freed = true;
    }
    done = std::exchange(p.done, nullptr);
  }
  for (std::uint64_t id : waiters) reservations_->forget_waiter(id);
  if (done) done(std::move(st), maybe_bound);
  if (freed) slot_given_back();
}

void KubeBinder::label_groups(const std::string& pod, const std::vector<std::string>& groups) {
  json labels = json::object();
  if (groups.size() == 1) {
    labels[std::string(kGpuGroupLabel)] = groups.front();
  } else {
    for (const auto& group : groups) labels[std::string(kGpuGroupLabelPrefix) + group] = group;
  }
  const auto slash = pod.find('/');
  DueWrite write;
  write.path = fmt::format("/api/v1/namespaces/{}/pods/{}", pod.substr(0, slash), pod.substr(slash + 1));
  write.patch = {{"metadata", {{"labels", labels}}}};
  write.what = fmt::format("pod {}: bound, but not labelled with its GPU group {} yet", pod, fmt::join(groups, ","));
  queue_write(std::move(write));
}

void KubeBinder::record_members(const BindAnswer& answer, const std::string& uid) {
  if (uid.empty()) return;  // a caller that sent no uid: the pod's own annotations are all there is
  for (const ReservationClaim& claim : answer.reservations) {
    json annotations = {{std::string(kReservationMemberPrefix) + uid, answer.pod}};
    if (auto stale = answer.stale_members.find(claim.group); stale != answer.stale_members.end()) {
      for (const auto& gone : stale->second) annotations[std::string(kReservationMemberPrefix) + gone] = nullptr;
    }
    DueWrite write;
    write.path = fmt::format("/api/v1/namespaces/{}/pods/{}", reservations_->options().ns, claim.pod);
    write.patch = {{"metadata", {{"annotations", annotations}}}};
    write.what = fmt::format("reservation pod {}/{}: not yet recording pod {} as a member of group {}", reservations_->options().ns,
                             claim.pod, answer.pod, claim.group);
    queue_write(std::move(write));
  }
}

void KubeBinder::queue_write(DueWrite write) {
  constexpr std::size_t kMostDue = 100'000;  // an API server down for long: the oldest writes give way
  {
    std::lock_guard lock(label_mu_);
    if (labels_due_.size() >= kMostDue) {
      spdlog::warn("{} (too many writes due; given up)", labels_due_.front().what);
      labels_due_.pop_front();
    }
    write.not_before = std::chrono::steady_clock::now();
    labels_due_.push_back(std::move(write));
    if (!labeller_.joinable()) labeller_ = std::thread([this] { label_loop(); });
  }
  label_wake_.notify_one();
}

bool KubeBinder::send_write(const DueWrite& due, std::unique_ptr<httplib::Client>& c) {
  auto res = c->Patch(due.path, due.patch.dump(), "application/merge-patch+json");
  if (res && (res->status == 200 || res->status == 404)) return true;  // written, or gone
  spdlog::warn("{}: {}", due.what, api_message(res));
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
    DueWrite due = std::move(labels_due_.front());
    labels_due_.pop_front();
    lock.unlock();
    const bool sent = send_write(due, c);
    lock.lock();
    if (!sent && !stopping_ && ++due.attempts < kAttempts) {
      due.not_before = std::chrono::steady_clock::now() + std::chrono::seconds(1 << due.attempts);
      labels_due_.push_back(std::move(due));
    }
  }
}

}  // namespace fracpack::api
