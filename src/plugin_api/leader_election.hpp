// One leader among `fracpack serve` replicas, elected with a coordination.k8s.io/v1 Lease the way
// client-go's leaderelection package does (tools/leaderelection/leaderelection.go, resourcelock
// LeaseLock):
//
// - A candidate tries every `retry_period` (with up to 20 % jitter): it GETs the Lease and creates
//   it when missing. A Lease held by another identity is taken only once the holder has not
//   changed it for `lease_duration`, timed by this replica's own clock from when it saw the
//   record change (the holder's renewTime is never compared with this clock: no clock skew).
// - Every write carries the resourceVersion it read (optimistic concurrency): of two candidates,
//   the API server accepts one and answers 409 Conflict to the other.
// - The leader renews every `retry_period`. It leads only while its last successful renewal is
//   less than `renew_deadline` old, checked at each use (leading()), so a leader that cannot renew
//   stops binding `lease_duration - renew_deadline` (5 s by default) before anyone may take over.
//   A follower waits the longer of its own `lease_duration` and the Lease's leaseDurationSeconds.
// - Stopped while leading (SIGTERM), it releases the Lease (holderIdentity "", as client-go's
//   ReleaseOnCancel): a follower takes over within `retry_period` instead of `lease_duration`.
//
// Defaults are client-go's and kube-scheduler's: 15 s, 10 s, 2 s. Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"
#include "plugin_api/kube_api.hpp"

namespace fracpack::api {

struct LeaderElectionOptions {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "fracpack";
  std::string identity;  ///< this replica (the pod name); must be unique among replicas
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
};

/// kInvalidArgument unless retry_period < renew_deadline < lease_duration (client-go's checks),
/// the identity is set, and the names are DNS subdomain names.
Status check(const LeaderElectionOptions& options);

class LeaderElector {
 public:
  /// `on_leading`: called from the elector's thread when this replica takes the lead (true),
  /// before leading() first answers true (whatever a Bind needs is prepared there), and when it
  /// stops leading (false). It must return quickly: the renewals wait for it.
  LeaderElector(std::shared_ptr<KubeConnection> api, LeaderElectionOptions options, std::function<void(bool)> on_leading);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void start();
  /// Stops trying; a leader releases the Lease first.
  void stop();
  /// Whether this replica holds the Lease and renewed it less than renew_deadline ago.
  [[nodiscard]] bool leading() const;
  /// The holder last seen ("" when none is known yet).
  [[nodiscard]] std::string leader() const;
  [[nodiscard]] const LeaderElectionOptions& options() const { return options_; }
  /// Prometheus text: fracpack_leader (1 leading, 0 not), fracpack_leader_transitions_total.
  [[nodiscard]] std::string metrics() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  /// One attempt: true when this replica holds the Lease after it; `taken` set when it was
  /// another's (or nobody's) before.
  bool try_acquire_or_renew(bool& taken);
  /// Counts and announces a lead just taken; on_leading(true) runs before leading() is true.
  void take_lead();
  bool write(const nlohmann::json& lease, bool create);
  void release();
  /// Logs (once a minute) a Lease naming this identity at a version this replica did not write.
  void warn_if_identity_shared(const nlohmann::json& lease, const std::string& holder, Clock::time_point now);
  /// Sleeps about `d`, less if stopped. False when stopped.
  bool pause(std::chrono::milliseconds d);
  [[nodiscard]] std::string path(bool collection) const;

  std::shared_ptr<KubeConnection> api_;
  LeaderElectionOptions options_;
  std::function<void(bool)> on_leading_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> renewed_at_{0};  ///< steady-clock ns of the last successful renewal; 0 = not leading
  std::atomic<std::uint64_t> transitions_{0};  ///< times this replica took the lead
  mutable std::mutex mu_;
  std::string leader_;                 ///< under mu_
  nlohmann::json observed_;            ///< the Lease as last read (elector thread only)
  Clock::time_point observed_at_{};    ///< when its spec last changed, by this clock
  std::string written_version_;        ///< resourceVersion of this replica's last write (elector thread only)
  std::string written_renew_time_;     ///< its spec.renewTime
  Clock::time_point last_shared_warning_{};
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace fracpack::api
