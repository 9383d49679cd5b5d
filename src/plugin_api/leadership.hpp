// serve --leader-elect: one replica binds (docs/ha.md). This ties the Lease (leader_election.hpp)
// to the rest of the server:
// - the gate on acting (Extender::set_act_gate): a follower's Bind is refused with the leader's
//   name, and so are its watch's writes (reservation pods deleted, pods nudged);
// - a replica that takes the lead lists pods again before its first Bind, so that every bind the
//   previous leader made is in its ledger (the LIST is a quorum read, after the Lease write);
// - the leader labels its own pod `fracpack.io/leader: "true"` (followers remove it), so that a
//   Service selecting that label routes kube-scheduler to the leader while every replica stays
//   Ready (a readiness probe that failed on followers would stall rollouts and PodDisruptionBudgets).
// Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fracpack/core/status.hpp"
#include "plugin_api/cluster_watch.hpp"
#include "plugin_api/leader_election.hpp"

namespace fracpack::api {

inline constexpr const char* kLeaderLabel = "fracpack.io/leader";

class Leadership {
 public:
  /// `pod_namespace`: where this replica's pod is ($POD_NAMESPACE); "" = no pod to label.
  Leadership(std::shared_ptr<KubeConnection> api, LeaderElectionOptions options, std::string pod_namespace);
  ~Leadership();
  Leadership(const Leadership&) = delete;
  Leadership& operator=(const Leadership&) = delete;
  /// OK while leading and caught up; kUnavailable saying why not (retry, at the leader).
  [[nodiscard]] Status may_act() const;
  /// The watch to relist when taking the lead. Before start().
  void follow(ClusterWatch* watch) { watch_ = watch; }
  void start();
  /// Stops; a leader releases the Lease and its label.
  void stop();
  [[nodiscard]] std::string metrics() const { return elector_.metrics(); }

 private:
  void on_leading(bool leading);
  /// Asks the labeller for kLeaderLabel set (leading) or removed; it retries until the API
  /// server takes it (a Service selecting no pod would stop scheduling), off the elector's
  /// thread (a slow PATCH must not delay a renewal).
  void want_label(bool leading);
  void run_labeller();
  /// One PATCH of kLeaderLabel on this replica's pod; false when the API server did not take it.
  bool label(bool leading);

  std::shared_ptr<KubeConnection> api_;
  std::string pod_namespace_;
  LeaderElector elector_;
  ClusterWatch* watch_ = nullptr;
  std::mutex label_mu_;
  std::condition_variable label_wake_;
  std::optional<bool> label_wanted_;  ///< under label_mu_: the state to write, nullopt when written
  bool label_stopping_ = false;       ///< under label_mu_
  std::thread labeller_;
};

}  // namespace fracpack::api
