// The API server as the truth (serve --kube-api): reflectors for Nodes, Pods (all namespaces),
// KAI Queues (scheduling.run.ai/v2), PodGroups (scheduling.run.ai/v2alpha2) and PriorityClasses
// feed the extender core (Extender::watch_listed, watch_changed); the core is marked synced once
// the first list of every kind is applied; binds the API server does not show within their time
// are settled by asking for the pod. Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fracpack/server/extender.hpp"
#include "plugin_api/kube_api.hpp"
#include "plugin_api/reflector.hpp"
#include "plugin_api/watch_lag.hpp"

namespace fracpack::api {

class ClusterWatch final : public ReflectorSink {
 public:
  struct Options {
    std::chrono::seconds min_watch_timeout{300};  ///< Reflector::Options
    std::size_t page_size = 500;
    std::chrono::milliseconds settle_every{1000};  ///< how often expired assumed binds are asked for
  };
  /// `on_synced`: called once, from a reflector's thread, when every kind has been listed.
  ClusterWatch(Extender& core, std::shared_ptr<KubeConnection> api, Options options, std::function<void()> on_synced);
  ~ClusterWatch() override;
  ClusterWatch(const ClusterWatch&) = delete;
  ClusterWatch& operator=(const ClusterWatch&) = delete;

  void start();
  void stop();
  /// Touches these pods (an annotation, fracpack.io/retry) so that kube-scheduler moves them out
  /// of its unschedulable queue; from the watch's own thread, a quarter second later (after
  /// kube-scheduler has put the pod there), not from the caller's.
  void nudge(const std::vector<std::string>& pods);
  /// Lists pods again now (a replica that just took the lead: every bind the previous leader
  /// made must be in its ledger before it binds); resynced() once that list is applied.
  void resync();
  [[nodiscard]] bool resynced() const;
  /// This replica took or lost the lead: GpuReservations::new_term (the reservations' decisions of
  /// the term before are dropped; this deployment's pods wait out the grace before any retires).
  void new_term();
  /// Once this replica may act (synced, leading, its pods listed again), the pending pods that now
  /// fit are nudged (Extender::retry_pending): those whose Filter or Bind failed while no replica
  /// could act wait in kube-scheduler's unschedulable queue otherwise. Called on taking the lead;
  /// the first sync owes it too.
  void retry_pending_when_able();
  /// The ledger against a fresh list of the API server's pods (Extender::verify_against). A
  /// difference may be one the watch has yet to deliver: the list is asked for again (up to 5
  /// times, 300 ms apart) while any shows, and only what every comparison found is reported.
  /// Empty when they agree; "" also when the list cannot be had (said as such).
  [[nodiscard]] std::vector<std::string> verify_api() const;
  /// Prometheus text: per kind, lists, relists, watch restarts, events applied, bookmarks,
  /// errors, how long ago the last change was applied, the lag from the API server's change to
  /// the ledger (watch_lag.hpp), and the time spent applying batches.
  [[nodiscard]] std::string metrics() const;

  void listed(const std::string& kind, std::vector<nlohmann::json> objects) override;
  void changed(const std::string& kind, std::vector<ApiEvent> events) override;

 private:
  void check_synced();
  void settle_loop();
  /// The leader only: sweeps the reservations (Extender::sweep_reservations) and deletes the
  /// reservation pods that sweep found due, each with its uid as precondition.
  void delete_reservations();
  /// At most once a second, on every replica (so that when each gang went stale stays current on a
  /// follower that later leads), Extender::evictions (stale gangs, and victims kube-scheduler left);
  /// the leader deletes those pods. A
  /// pod deleted is not asked for again while it still terminates; a failed delete is retried
  /// after kEvictAgainAfter.
  void evict_pods();
  /// The settle loop runs now (and waits again from there), not at its next tick.
  void wake();
  void log_notes(const std::string& kind, const std::vector<std::string>& notes);

  Extender& core_;
  std::shared_ptr<KubeConnection> api_;
  Options options_;
  std::function<void()> on_synced_;
  std::vector<std::unique_ptr<Reflector>> reflectors_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> resync_generation_{0};
  std::atomic<bool> retry_owed_{false};  ///< retry_pending_when_able() not carried out yet
  WatchLag lag_;
  std::atomic<std::uint64_t> apply_micros_{0};   ///< time spent applying batches, in µs
  std::atomic<std::uint64_t> batches_{0};
  std::atomic<std::uint64_t> binds_settled_{0};
  std::atomic<std::uint64_t> nudged_{0};
  std::atomic<std::uint64_t> reservations_deleted_{0};
  std::atomic<std::uint64_t> stale_evicted_{0};
  std::atomic<std::uint64_t> victims_evicted_{0};
  /// Settle thread only: pod → when its delete was asked (nullopt: it succeeded; the pod still terminates).
  std::map<std::string, std::optional<std::chrono::steady_clock::time_point>> evicting_;
  std::chrono::steady_clock::time_point next_stale_check_{};  ///< settle thread only
  std::mutex settle_mu_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> nudges_;  ///< pods to touch, and when; under settle_mu_
  std::condition_variable settle_wake_;
  bool woken_ = false;  ///< under settle_mu_
  std::thread settler_;
};

}  // namespace fracpack::api
