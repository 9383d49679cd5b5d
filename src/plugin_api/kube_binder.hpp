// Binds pods in the Kubernetes API server, for kube-scheduler's bindVerb.
//
// With `bindVerb` set, kube-scheduler leaves binding to the extender: fracpack's Bind must create
// the pod's Binding (POST /api/v1/namespaces/<ns>/pods/<name>/binding, what kube-scheduler's own
// DefaultBinder sends). The Binding carries the GPU annotations fracpack decided
// (nvidia.com/container.<ctr>.gpus.devices, .gpu-compute.portion); the API server copies a
// Binding's annotations onto the pod as it sets spec.nodeName (pkg/registry/core/pod/storage,
// setPodHostAndAnnotations), so the pod is bound and annotated in one call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fracpack/server/extender.hpp"
#include "fracpack/server/gpu_reservations.hpp"
#include "fracpack/core/status.hpp"
#include "plugin_api/kube_api.hpp"

namespace boost::asio {
class thread_pool;
}

namespace httplib {
class Client;
class Result;
}

namespace fracpack::api {

/// The API server's own words for a failed request: its Status object's message, else the body.
std::string api_message(const httplib::Result& res);

class KubeBinder {
 public:
  /// A Bind's outcome: OK, or why not; `maybe_bound`: the API server may have bound the pod anyway
  /// (the Binding was sent and no clear answer came back).
  using BindDone = std::function<void(Status st, bool maybe_bound)>;

  /// kInvalidArgument when the URL is not http(s)://host[:port] or a file cannot be read.
  static Result<std::unique_ptr<KubeBinder>> open(const KubeApi& api);
  explicit KubeBinder(std::shared_ptr<KubeConnection> connection);
  ~KubeBinder();

  /// Creates the Binding of `answer.pod` ("namespace/name", UID `uid` when known: the API server
  /// then refuses a different pod of the same name) to `answer.node` with `answer.annotations`.
  /// A pod already bound to that node is success (a retried Bind). kNotFound when the pod is
  /// gone, kAlreadyExists when it is bound elsewhere, kInvalidArgument for a name that is not a
  /// Kubernetes name, kUnavailable when this replica may not act or too many Binds wait already,
  /// kInternal for any other failure; each message names the pod and quotes the API server.
  /// `done` is called once: from this call when nothing must be waited for, else from the
  /// binder's own threads once the reservation pods reported (or did not in time). A Bind that
  /// waits holds no thread meanwhile.
  void bind_async(const BindAnswer& answer, const std::string& uid, BindDone done);
  /// bind_async(), waited for.
  Status bind(const BindAnswer& answer, const std::string& uid, bool* maybe_bound);
  /// Binds fractions behind reservation pods (gpu_reservations.hpp): before the Binding, each of
  /// the pod's GPUs gets its reservation pod (created and waited for when new), the pod gets its
  /// runai-gpu-group label(s), and the Binding names the reported GPUs. Null: off.
  void use_reservations(GpuReservations* reservations) { reservations_ = reservations; }
  /// Checked again right before the Binding is sent (after a wait for a reservation pod that can
  /// take seconds): a replica that lost the lead meanwhile sends nothing (leadership.hpp). Its
  /// refusal is returned as is, with maybe_bound false.
  void use_gate(std::function<Status()> may_act) { gate_ = std::move(may_act); }
  /// At most `most` Binds wait for reservation pods' reports at once (ServeOptions::max_waiting_binds);
  /// one more fails at once, kUnavailable, before it creates anything.
  void limit_waiting(std::size_t most) { most_waiting_ = most; }
  /// Called (from the binder's threads, with no lock held) with a pod refused for want of a
  /// waiting slot, once a waiting Bind ends and frees one: kube-scheduler holds that pod in its
  /// unschedulable queue (60 s in v1.20) unless it is touched (ClusterWatch::nudge). One pod per
  /// slot freed, oldest refusal first; at most 4,096 remembered.
  void on_slot_freed(std::function<void(const std::vector<std::string>& pods)> retry);
  /// Binds waiting for a report now (metrics).
  [[nodiscard]] std::size_t waiting() const { return waiting_.load(); }

 private:
  struct Pending;  ///< one Bind on its way: kube_reservation.cpp
  struct Idle {
    std::unique_ptr<httplib::Client> client;
    std::chrono::steady_clock::time_point made;  ///< its bearer token is the one read then
  };
  Idle client();  ///< a pooled connection, or a new one
  void give_back(Idle client);

  /// The reservation step of a fraction's Bind, up to the wait: a waiting slot, then each new
  /// reservation pod created. kUnavailable (no slot), kInternal (the API server refused a
  /// creation); claims made are given up on failure. Nothing is bound yet.
  Status prepare_reservations(Pending& p);
  /// Waits for every report `p` lacks, without a thread: the book's when_reported and a timer;
  /// then finish(), or fail() with why (the deadline passed, a reservation pod went).
  void await_reports(const std::shared_ptr<Pending>& p);
  /// The deadline passed first: `p` fails naming the reservation pod that did not report.
  void expired(const std::shared_ptr<Pending>& p);
  /// One report for claim `i` (or why none comes).
  void reported(const std::shared_ptr<Pending>& p, std::size_t i, Result<std::string> device);
  /// The reported GPUs into the annotations, the gate, the Binding, the label: `p->done`.
  void finish(const std::shared_ptr<Pending>& p);
  /// `p->done` with `st`, said in the log (the caller releases the pod's GPUs: reservation pods
  /// no fraction holds then go).
  void fail(Pending& p, Status st);
  /// Every end of a Bind: its waiters forgotten, its waiting slot given back, `done` called once
  /// and dropped (nothing of the caller's stays alive in the book).
  void conclude(Pending& p, Status st, bool maybe_bound);
  /// The Binding itself; `*maybe_bound` as BindDone's; `*answered`: the API server answered (the
  /// connection may be used again); `*ours`: false when the pod was bound there already by
  /// another Bind with other GPU groups (OK all the same; its labels and members are not this one's).
  Status send_binding(const BindAnswer& answer, const std::string& uid, const std::map<std::string, std::string>& annotations,
                      const std::vector<std::string>& groups, httplib::Client& c, bool* maybe_bound, bool* answered, bool* ours);
  /// Labels a bound fraction with its GPU groups (runai-gpu-group), from a thread of its own: after
  /// the Binding (a label change on a pod kube-scheduler is still binding would send it through
  /// scheduling again) and off the Bind's path. A failure is logged only: the Binding's
  /// fracpack.io/gpu-groups annotation keeps the link.
  void label_groups(const std::string& pod, const std::vector<std::string>& groups);
  /// Records a bound fraction as a member of each of its groups (kReservationMemberPrefix), on
  /// that group's reservation pod, dropping the members found gone (BindAnswer::stale_members);
  /// as the label, off the Bind's path, and only once the Binding is made: a record is a fact.
  void record_members(const BindAnswer& answer, const std::string& uid);
  /// A merge patch due on a pod: a fraction's group labels, a reservation pod's members.
  struct DueWrite {
    std::string path;   ///< the pod's API path
    nlohmann::json patch;
    std::string what;   ///< for the log: "pod x: its GPU group label g"
    int attempts = 0;
    std::chrono::steady_clock::time_point not_before;
  };
  void queue_write(DueWrite write);
  void label_loop();
  /// One PATCH; true when done (or the pod is gone).
  bool send_write(const DueWrite& due, std::unique_ptr<httplib::Client>& c);
  /// Creates the claim's reservation pod; kInternal quoting the API server otherwise.
  Status create_reservation(const ReservationClaim& claim, httplib::Client& c);

  std::shared_ptr<KubeConnection> connection_;
  std::mutex mu_;
  std::vector<Idle> idle_;  ///< kube-scheduler binds in parallel
  GpuReservations* reservations_ = nullptr;
  std::function<Status()> gate_;  ///< empty: always allowed
  std::size_t most_waiting_ = 1536;
  std::atomic<std::size_t> waiting_{0};  ///< Binds waiting for a report
  std::mutex capped_mu_;
  std::function<void(const std::vector<std::string>&)> slot_freed_;  ///< under capped_mu_
  std::deque<std::string> capped_;  ///< pods refused for want of a slot, oldest first (under capped_mu_)
  std::chrono::steady_clock::time_point capped_said_{};  ///< when the cap was last logged (under capped_mu_)
  std::size_t capped_unsaid_ = 0;  ///< refusals since (under capped_mu_)
  /// A Bind refused for want of a slot: remembered for slot_freed_, said in the log at most every 10 s.
  void refused_at_cap(const std::string& pod);
  /// A waiting slot was given back: the oldest pod refused for want of one goes to slot_freed_.
  void slot_given_back();
  std::mutex label_mu_;
  std::condition_variable label_wake_;
  std::deque<DueWrite> labels_due_;  ///< under label_mu_, in order (a retry goes to the back)
  bool stopping_ = false;                                                    ///< under label_mu_
  std::thread labeller_;
  /// Finishes Binds whose reports came, and runs their deadlines' timers: the Binding is sent
  /// from here, never from the watch's thread that delivered the report.
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

}  // namespace fracpack::api
