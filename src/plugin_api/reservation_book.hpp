// The reservation pods fracpack knows (gpu_reservations.hpp): by group, and by the ledger GPU
// (node, index) each holds. The binder claims and waits on one side; the watch records what the
// API server shows on the other. Its own lock, so a Bind waiting for a report never holds the
// scheduling state's. Internal to src/plugin_api/.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/server/gpu_reservations.hpp"

namespace fracpack::api {

class ReservationBook final : public GpuReservations {
 public:
  struct Entry {
    std::string group;
    std::string node;
    int gpu = -1;               ///< ledger index; -1 until known
    /// `gpu` is its owner's word (this deployment's claim, or the pod's fracpack.io/gpu), not a
    /// guess: a guess gives way to it.
    bool indexed = false;
    std::string pod;            ///< name in options().ns
    std::string uid;            ///< its metadata.uid, once seen
    std::string device;         ///< reported GPU; "" until reported
    std::string owner;          ///< kReservationOwnerAnnotation; "" for a pod KAI's binder made
    std::string creator;        ///< kReservationCreatorAnnotation
    bool visible = false;       ///< the watch shows the pod
    bool claimed = false;       ///< a Bind claimed it, or a fraction of its group was seen: idle means done
    bool deleting = false;      ///< the leader decided to delete it (retire)
    bool delete_sent = false;   ///< its DELETE was taken (take_deletions): it may be going, its GPU's claims are blocked
    std::string created;        ///< metadata.creationTimestamp ("" until seen: a claim of this process, the newest)
    /// The running fractions it names (kReservationMemberPrefix): uid → "namespace/name". This
    /// deployment's pods only.
    std::map<std::string, std::string> members;
    std::chrono::steady_clock::time_point since;  ///< when fracpack first knew it
  };

  explicit ReservationBook(GpuReservationOptions options);

  // GpuReservations: the binder's side.
  [[nodiscard]] const GpuReservationOptions& options() const override { return options_; }
  /// "namespace/name" of reservation pod `pod`: its key in the scheduling state and the snapshot.
  [[nodiscard]] std::string key(const std::string& pod) const { return options_.ns + "/" + pod; }
  ReservationClaim claim(const std::string& node, int gpu) override;
  Result<std::string> await_device(const std::string& group, std::chrono::steady_clock::time_point deadline) override;
  std::uint64_t when_reported(const std::string& group, std::function<void(Result<std::string>)> done) override;
  void forget_waiter(std::uint64_t id) override;
  [[nodiscard]] Status report_timeout(const std::string& group) const override;
  void creation_failed(const ReservationClaim& claim) override;
  void deletion_failed(const ReservationDeletion& deletion) override;
  /// The deletions retire() decided, less those that name a reservation pod some group now
  /// counts on, and the strays not asked for yet.
  std::vector<ReservationDeletion> take_deletions() override;
  [[nodiscard]] bool sweep_due() const override;
  void deleted(const std::string& pod) override;
  void deletion_refused(const ReservationDeletion& deletion) override;
  void new_term() override;
  /// When the current term of leading (or this process) started: what this deployment made is
  /// not retired in its first predecessor_grace (retirement()).
  [[nodiscard]] std::chrono::steady_clock::time_point term_start() const;

  /// This deployment's (owner) pod, and this process's (creator).
  [[nodiscard]] bool ours(const Entry& e) const { return e.owner == options_.owner; }
  [[nodiscard]] bool mine(const Entry& e) const { return ours(e) && !options_.creator.empty() && e.creator == options_.creator; }
  /// The core found a GPU whose reservation nothing else holds: the leader should sweep.
  void note_idle();

  // The watch's side.
  /// Whether `pod` is a reservation pod: in options().ns with a runai-gpu-group label.
  [[nodiscard]] bool is_reservation(const nlohmann::json& pod) const;
  /// The reservation pod as the API server shows it (not deleted, not finished), on a node of
  /// `gpu_count` GPUs (-1: not known yet). A pod this deployment owns gives its group the ledger
  /// index it names (fracpack.io/gpu, when below `gpu_count`), over any guess. Returns the entry
  /// as it is now.
  Entry seen(const nlohmann::json& pod, int gpu_count = -1);
  /// A reservation pod that exists and no group counts on (one the kubelet refused: Failed): the
  /// leader's take_deletions() deletes it, until gone() says it went. A fact about the API
  /// server's pods, not a queue: a replica that leads later finds it as it is then.
  void stray(const std::string& pod, const std::string& uid);
  /// A complete list of pods: strays it does not name (`listed(pod)` false) are gone.
  void keep_strays(const std::function<bool(const std::string& pod)>& listed);
  /// The reservation pod is deleted or finished: its entry goes (waiting Binds are aborted).
  void gone(const std::string& pod);
  /// The ledger index of `group` on `node` (nullopt: unknown group, or another node).
  [[nodiscard]] std::optional<int> gpu_of(const std::string& group, const std::string& node) const;
  /// `group` is on ledger GPU `gpu` of `node` (when it had no index there yet); `claimed`: a
  /// fraction of it was seen, so idle from now on means done. Returns the group's index (which
  /// wins over `gpu`).
  int learn(const std::string& group, const std::string& node, int gpu, bool claimed);
  /// The ledger GPU of `node` whose reservation pod reported `device`, if any.
  [[nodiscard]] std::optional<int> gpu_of_device(const std::string& node, const std::string& device) const;
  /// The group at ledger GPU (`node`, `gpu`), if any.
  [[nodiscard]] std::optional<Entry> at(const std::string& node, int gpu) const;
  [[nodiscard]] std::optional<Entry> find(const std::string& group) const;
  /// The groups on `node` whose reservation pods name the pod of uid `uid` a member
  /// (kReservationMemberPrefix), by ledger index: its groups, as recorded where its tenant
  /// cannot write. Groups with no ledger index yet are not counted. O(log groups + the node's GPUs).
  [[nodiscard]] std::vector<std::string> groups_of_member(const std::string& uid, const std::string& node) const;
  /// Every entry (copies), for the sweep of idle GPUs.
  [[nodiscard]] std::vector<Entry> entries() const;
  /// Asks for the deletion of the group's reservation pod (once; a failed deletion is asked again).
  /// The leader's sweep only: a follower never decides a deletion.
  void retire(const std::string& group);

 private:
  std::string new_group();
  std::string new_pod_name(const std::string& node);
  void erase(std::map<std::string, Entry>::iterator it);  ///< caller holds mu_
  /// Wakes await_device()'s waiters, and answers when_reported()'s whose group reported or went.
  /// Caller holds mu_.
  void notify();
  /// Gives `e` ledger GPU `gpu` of `node` on its owner's word; a guessed group there gives way.
  /// Caller holds mu_.
  void place_indexed(Entry& e, const std::string& node, int gpu);
  /// `device` as `e`'s reported GPU, unless it is no single GPU or another reservation pod of the
  /// node reported it. Caller holds mu_.
  void take_report(Entry& e, std::string device);

  GpuReservationOptions options_;
  mutable std::mutex mu_;
  std::condition_variable reported_;  ///< a device reported, or an entry gone
  struct Waiter {
    std::uint64_t id;
    std::string group;
    std::function<void(Result<std::string>)> done;
  };
  std::vector<Waiter> waiters_;  ///< when_reported()'s, under mu_
  std::uint64_t next_waiter_ = 0;
  std::map<std::string, Entry> groups_;                    ///< by group
  std::map<std::pair<std::string, int>, std::string> at_;  ///< (node, gpu) → group
  std::vector<ReservationDeletion> deletions_;  ///< retire()'s, the leader's own decisions
  struct Stray {
    std::string uid;
    bool asked = false;  ///< its deletion was taken (until it fails)
  };
  std::map<std::string, Stray> strays_;  ///< by pod: a second pod of a group, a Failed one
  bool idle_noted_ = false;  ///< under mu_: note_idle() since the last take_deletions()
  std::chrono::steady_clock::time_point term_start_ = std::chrono::steady_clock::now();  ///< under mu_
  std::mt19937_64 random_;
};

/// The reservation pod KAI's binder creates (createResourceReservationPod), for `claim`, with
/// fracpack's owner, creator and ledger-index annotations (its members are written after their
/// Bindings: KubeBinder::record_members).
nlohmann::json reservation_pod(const GpuReservationOptions& options, const ReservationClaim& claim);

/// The GPU groups a pod's labels name: `runai-gpu-group`, then each `runai-gpu-group/<g>` in
/// label order (KAI GetGpuGroups).
std::vector<std::string> gpu_groups(const nlohmann::json& pod);
/// A bound fraction's groups, in the order of its GPUs: the fracpack.io/gpu-groups annotation of its
/// Binding, else its labels.
std::vector<std::string> bound_gpu_groups(const nlohmann::json& pod);

}  // namespace fracpack::api
