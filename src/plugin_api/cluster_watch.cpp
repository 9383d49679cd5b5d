#include "plugin_api/cluster_watch.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "fracpack/core/labels.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/metrics.hpp"

namespace fracpack::api {
namespace {

struct Watched {
  const char* kind;
  const char* path;
  bool optional;  ///< a CRD that may not be installed
};
constexpr Watched kWatched[] = {
    {"Node", "/api/v1/nodes", false},
    {"PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", false},
    {"Queue", "/apis/scheduling.run.ai/v2/queues", true},
    {"PodGroup", "/apis/scheduling.run.ai/v2alpha2/podgroups", true},
    {"Pod", "/api/v1/pods", false},
};

}  // namespace

ClusterWatch::ClusterWatch(Extender& core, std::shared_ptr<KubeConnection> api, Options options, std::function<void()> on_synced)
    : core_(core), api_(std::move(api)), options_(options), on_synced_(std::move(on_synced)) {
  for (const auto& w : kWatched) {
    Reflector::Options r;
    r.kind = w.kind;
    r.path = w.path;
    r.optional = w.optional;
    r.page_size = options_.page_size;
    r.min_watch_timeout = options_.min_watch_timeout;
    reflectors_.push_back(std::make_unique<Reflector>(api_, r, *this));
  }
}

ClusterWatch::~ClusterWatch() { stop(); }

void ClusterWatch::start() {
  for (auto& r : reflectors_) r->start();
  settler_ = std::thread([this] { settle_loop(); });
}

void ClusterWatch::stop() {
  stopping_ = true;
  settle_wake_.notify_all();
  for (auto& r : reflectors_) r->stop();
  if (settler_.joinable()) settler_.join();
}

void ClusterWatch::log_notes(const std::string& kind, const std::vector<std::string>& notes) {
  constexpr std::size_t kShown = 20;  // a relist of thousands of bad objects must not flood the log
  for (std::size_t i = 0; i < notes.size() && i < kShown; ++i) spdlog::warn("watch {}: {}", kind, notes[i]);
  if (notes.size() > kShown) spdlog::warn("watch {}: and {} more like these", kind, notes.size() - kShown);
}

void ClusterWatch::listed(const std::string& kind, std::vector<nlohmann::json> objects) {
  Timer timer;
  std::vector<std::string> notes;
  core_.watch_listed(kind, objects, &notes);
  apply_micros_ += static_cast<std::uint64_t>(timer.seconds() * 1e6);
  ++batches_;
  spdlog::info("watch {}: listed {} ({} ms)", kind, objects.size(), static_cast<long>(timer.seconds() * 1000));
  log_notes(kind, notes);
  check_synced();
}

void ClusterWatch::changed(const std::string& kind, std::vector<ApiEvent> events) {
  Timer timer;
  std::vector<std::string> notes;
  core_.watch_changed(kind, events, &notes);
  lag_.observe(kind, events, std::chrono::system_clock::now());
  apply_micros_ += static_cast<std::uint64_t>(timer.seconds() * 1e6);
  ++batches_;
  log_notes(kind, notes);
  if (GpuReservations* r = core_.reservations(); r != nullptr && r->sweep_due() && core_.may_act().is_ok()) wake();
}

void ClusterWatch::delete_reservations() {
  GpuReservations* r = core_.reservations();
  if (r == nullptr || !core_.may_act().is_ok()) return;  // a follower decides nothing: the leader sweeps its own ledger
  // Every tick, the sweep decides from the ledger as it is now: what to delete is never a queue
  // built earlier (while this replica followed, say) and run later.
  core_.sweep_reservations();
  for (const ReservationDeletion& d : r->take_deletions()) {
    if (!core_.may_act().is_ok()) {  // the lead lost meanwhile: the next leader decides for itself
      r->deletion_failed(d);
      continue;
    }
    nlohmann::json options{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"gracePeriodSeconds", 0}};
    if (!d.uid.empty()) options["preconditions"] = {{"uid", d.uid}};
    auto res = api_->client()->Delete(fmt::format("/api/v1/namespaces/{}/pods/{}", r->options().ns, d.pod), options.dump(),
                                      "application/json");
    if (res && (res->status == 200 || res->status == 202)) {
      spdlog::info("reservation pod {}/{} deleted", r->options().ns, d.pod);
      ++reservations_deleted_;
    } else if (res && res->status == 404) {
      r->deleted(d.pod);  // gone already
    } else if (res && res->status == 409) {
      spdlog::info("reservation pod {}/{}: not deleted, it is another pod (uid) by now", r->options().ns, d.pod);
      r->deletion_refused(d);
    } else {
      spdlog::warn("reservation pod {}/{}: cannot delete it ({}); asked again in a second", r->options().ns, d.pod, api_message(res));
      r->deletion_failed(d);
    }
  }
}

void ClusterWatch::check_synced() {
  if (synced_) return;
  for (const auto& r : reflectors_) {
    if (!r->synced()) return;
  }
  if (synced_.exchange(true)) return;
  core_.set_synced(true);
  spdlog::info("watch: every kind listed; serving decisions");
  retry_pending_when_able();  // a restart: pods kube-scheduler failed on while this process was down
  if (on_synced_) on_synced_();
}

void ClusterWatch::resync() {
  for (const auto& r : reflectors_) {
    if (r->kind() != "Pod") continue;
    const std::uint64_t generation = r->request_relist();
    resync_generation_ = generation;  // resynced() is false from here until that list is applied
    r->await_relist(generation);
  }
}

void ClusterWatch::new_term() {
  if (GpuReservations* r = core_.reservations()) r->new_term();
  core_.new_term();
}

void ClusterWatch::retry_pending_when_able() {
  retry_owed_ = true;
  wake();
}

bool ClusterWatch::resynced() const {
  for (const auto& r : reflectors_) {
    if (r->kind() == "Pod") return r->listed_since(resync_generation_.load());
  }
  return true;
}

std::vector<std::string> ClusterWatch::verify_api() const {
  std::string why;
  auto list_pods = [this, &why]() -> std::optional<std::vector<nlohmann::json>> {
    std::vector<nlohmann::json> pods;
    std::string next;
    auto client = api_->client();
    do {  // a LIST without a resourceVersion: the API server's current state
      auto res = client->Get(fmt::format("/api/v1/pods?limit=500{}", next.empty() ? std::string() : "&continue=" + httplib::detail::encode_query_param(next)));
      if (!res || res->status != 200) {
        why = api_message(res);
        return std::nullopt;
      }
      auto page = nlohmann::json::parse(res->body, nullptr, false);
      if (!page.is_object() || !page.contains("items") || !page["items"].is_array()) return std::nullopt;
      for (auto& p : page["items"]) pods.push_back(std::move(p));
      static const nlohmann::json::json_pointer kContinue("/metadata/continue");
      next = page.contains(kContinue) && page[kContinue].is_string() ? page[kContinue].get<std::string>() : std::string();
    } while (!next.empty());
    return pods;
  };
  std::vector<std::string> found;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto pods = list_pods();
    if (!pods) return {fmt::format("cannot list pods from the API server to compare with: {}", why)};
    std::vector<std::string> now = core_.verify_against(*pods);
    if (attempt > 0) std::erase_if(now, [&](const std::string& d) { return std::find(found.begin(), found.end(), d) == found.end(); });
    found = std::move(now);
    if (found.empty()) break;
  }
  return found;
}

void ClusterWatch::nudge(const std::vector<std::string>& pods) {
  if (!core_.may_act().is_ok()) return;  // the leader's own Filters nudge what it needs
  {
    std::lock_guard lock(settle_mu_);
    const auto when = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    for (const auto& p : pods) {
      const bool queued = std::any_of(nudges_.begin(), nudges_.end(), [&](const auto& n) { return n.first == p; });
      if (!queued) nudges_.emplace_back(p, when);  // one touch retries it; two would be a write for nothing
    }
  }
  wake();
}

void ClusterWatch::wake() {
  {
    std::lock_guard lock(settle_mu_);
    woken_ = true;
  }
  settle_wake_.notify_all();
}

void ClusterWatch::settle_loop() {
  while (!stopping_) {
    std::vector<std::string> nudges;
    {
      std::unique_lock lock(settle_mu_);
      auto wake = std::chrono::steady_clock::now() + options_.settle_every;
      for (const auto& [_, when] : nudges_) wake = std::min(wake, when);
      settle_wake_.wait_until(lock, wake, [&] { return stopping_.load() || woken_; });
      woken_ = false;
      const auto now = std::chrono::steady_clock::now();
      std::erase_if(nudges_, [&](const auto& n) {
        if (n.second > now) return false;
        nudges.push_back(n.first);
        return true;
      });
    }
    if (stopping_) break;
    if (retry_owed_ && core_.may_act().is_ok() && retry_owed_.exchange(false)) core_.retry_pending();
    const auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const std::string& key : nudges) {
      const auto slash = key.find('/');
      const nlohmann::json patch = {{"metadata", {{"annotations", {{std::string(k8s::kRetryAnnotation), std::to_string(stamp)}}}}}};
      auto res = api_->client()->Patch(fmt::format("/api/v1/namespaces/{}/pods/{}", key.substr(0, slash), key.substr(slash + 1)),
                                       patch.dump(), "application/merge-patch+json");
      if (res && res->status == 200) {
        ++nudged_;
      } else {
        spdlog::warn("pod {}: could not touch it for kube-scheduler to retry it ({})", key,
                     res ? fmt::format("HTTP {}", res->status) : httplib::to_string(res.error()));
      }
    }
    delete_reservations();
    evict_pods();
    for (const AssumedBind& b : core_.assumed_binds()) {
      const auto slash = b.pod.find('/');
      auto client = api_->client();
      auto res = client->Get(fmt::format("/api/v1/namespaces/{}/pods/{}", b.pod.substr(0, slash), b.pod.substr(slash + 1)));
      if (!res || (res->status != 200 && res->status != 404)) continue;  // no clear answer: ask again later
      core_.settle(b, res->status == 404 ? nlohmann::json() : nlohmann::json::parse(res->body, nullptr, false));
      ++binds_settled_;
    }
  }
}

void ClusterWatch::evict_pods() {
  constexpr std::chrono::seconds kEvictAgainAfter{30};
  const auto now = std::chrono::steady_clock::now();
  if (now < next_stale_check_) return;
  next_stale_check_ = now + std::chrono::seconds(1);
  const std::vector<PodEviction> evictions = core_.evictions();  // followers too: the clocks stay current
  std::erase_if(evicting_, [&](const auto& e) {  // gone, or no longer to evict; or a failed delete due again
    const bool listed = std::any_of(evictions.begin(), evictions.end(), [&](const auto& x) { return x.pod == e.first; });
    return !listed || (e.second && now - *e.second > kEvictAgainAfter);
  });
  if (!core_.may_act().is_ok()) return;  // a follower leaves them to the leader
  for (const PodEviction& e : evictions) {
    if (evicting_.contains(e.pod)) continue;
    if (!core_.may_act().is_ok()) return;  // the lead was lost meanwhile: no delete after that
    if (e.uid.empty()) {  // a delete without the uid precondition could hit a pod made since under that name
      spdlog::warn("pod {}: not evicted although {}: its uid is not known", e.pod, e.reason);
      evicting_[e.pod] = now;
      continue;
    }
    const auto slash = e.pod.find('/');
    const nlohmann::json options{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", e.uid}}}};
    auto res = api_->client()->Delete(fmt::format("/api/v1/namespaces/{}/pods/{}", e.pod.substr(0, slash), e.pod.substr(slash + 1)),
                                      options.dump(), "application/json");
    if (res && (res->status == 200 || res->status == 202)) {
      spdlog::info("pod {} evicted: {}", e.pod, e.reason);
      evicting_[e.pod] = std::nullopt;
      ++(e.why == PodEviction::Why::kStaleGang ? stale_evicted_ : victims_evicted_);
    } else if (res && (res->status == 404 || res->status == 409)) {
      evicting_[e.pod] = std::nullopt;  // gone already, or another pod by now: the watch tells
    } else {
      spdlog::warn("pod {}: cannot evict it ({}) although {}; asked again in {} s", e.pod, api_message(res), e.reason,
                   kEvictAgainAfter.count());
      evicting_[e.pod] = now;
    }
  }
}

std::string ClusterWatch::metrics() const {
  std::string out;
  out += "# HELP fracpack_watch_lists_total Complete lists applied, per kind.\n# TYPE fracpack_watch_lists_total counter\n";
  for (const auto& r : reflectors_) out += fmt::format("fracpack_watch_lists_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().lists.load());
  out += "# HELP fracpack_watch_relists_total Lists forced by 410 Gone (history compacted).\n# TYPE fracpack_watch_relists_total counter\n";
  for (const auto& r : reflectors_) out += fmt::format("fracpack_watch_relists_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().relists.load());
  out += "# HELP fracpack_watch_restarts_total Watches that ended and were opened again.\n# TYPE fracpack_watch_restarts_total counter\n";
  for (const auto& r : reflectors_) {
    out += fmt::format("fracpack_watch_restarts_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().watch_restarts.load());
  }
  out += "# HELP fracpack_watch_events_total Watch events applied (ADDED, MODIFIED, DELETED).\n# TYPE fracpack_watch_events_total counter\n";
  for (const auto& r : reflectors_) out += fmt::format("fracpack_watch_events_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().events.load());
  out += "# HELP fracpack_watch_bookmarks_total Bookmarks received.\n# TYPE fracpack_watch_bookmarks_total counter\n";
  for (const auto& r : reflectors_) out += fmt::format("fracpack_watch_bookmarks_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().bookmarks.load());
  out += "# HELP fracpack_watch_errors_total Failed lists and watches (each retried with backoff).\n# TYPE fracpack_watch_errors_total counter\n";
  for (const auto& r : reflectors_) out += fmt::format("fracpack_watch_errors_total{{kind=\"{}\"}} {}\n", r->kind(), r->stats().errors.load());
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  out += "# HELP fracpack_watch_last_change_age_seconds Since the last list, event or bookmark-free change was applied.\n"
         "# TYPE fracpack_watch_last_change_age_seconds gauge\n";
  for (const auto& r : reflectors_) {
    const auto last = r->stats().last_event_unix_ms.load();
    out += fmt::format("fracpack_watch_last_change_age_seconds{{kind=\"{}\"}} {:.3f}\n", r->kind(),
                       last == 0 ? -1.0 : static_cast<double>(now - last) / 1000.0);
  }
  out += "# HELP fracpack_watch_apply_seconds Time the ledger spent applying watch batches (the lag a batch adds).\n"
         "# TYPE fracpack_watch_apply_seconds summary\n";
  out += fmt::format("fracpack_watch_apply_seconds_sum {:.6f}\nfracpack_watch_apply_seconds_count {}\n",
                     static_cast<double>(apply_micros_.load()) / 1e6, batches_.load());
  std::vector<std::string> kinds;
  for (const auto& r : reflectors_) kinds.push_back(r->kind());
  out += lag_.metrics(kinds);
  out += fmt::format("# HELP fracpack_pods_nudged_total Pods touched (fracpack.io/retry) so that kube-scheduler retries them now: gang members, lost Bind races, pods refused before room was freed.\n"
                     "# TYPE fracpack_pods_nudged_total counter\nfracpack_pods_nudged_total {}\n",
                     nudged_.load());
  out += fmt::format("# HELP fracpack_binds_settled_total Binds not seen in time, settled by asking for the pod.\n"
                     "# TYPE fracpack_binds_settled_total counter\nfracpack_binds_settled_total {}\n",
                     binds_settled_.load());
  out += fmt::format("# HELP fracpack_reservation_pods_deleted_total Reservation pods deleted: their GPU went idle, or their Bind failed.\n"
                     "# TYPE fracpack_reservation_pods_deleted_total counter\nfracpack_reservation_pods_deleted_total {}\n",
                     reservations_deleted_.load());
  out += fmt::format("# HELP fracpack_stale_gang_evictions_total Pods deleted because their gang ran fewer members than its minMember for the staleness grace period.\n"
                     "# TYPE fracpack_stale_gang_evictions_total counter\nfracpack_stale_gang_evictions_total {}\n",
                     stale_evicted_.load());
  out += fmt::format("# HELP fracpack_victim_evictions_total Victims of a reclaim or preemption deleted by fracpack: the rest of a victim job kube-scheduler's preemption did not delete.\n"
                     "# TYPE fracpack_victim_evictions_total counter\nfracpack_victim_evictions_total {}\n",
                     victims_evicted_.load());
  return out;
}

}  // namespace fracpack::api
