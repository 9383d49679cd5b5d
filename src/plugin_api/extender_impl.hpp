// The extender core's implementation: the scheduling state and the store behind one
// reader-writer lock. The verbs the fronts call are in extender_filter.cpp (Filter, Prioritize,
// Explain), extender_bind.cpp (Bind, Preempt), extender_snapshot.cpp (Snapshot, gauges) and
// extender_core.cpp (open, Apply); extender_reservations.cpp keeps the reservation pods and
// forgets pods; extender_watch.cpp takes the API server's view from the watch.
// Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "fracpack/server/extender.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/binpack/verdict_cache.hpp"
#include "plugin_api/binding_log.hpp"
#include "plugin_api/name_resolver.hpp"
#include "plugin_api/object_change.hpp"
#include "plugin_api/recent_refusals.hpp"
#include "plugin_api/released_pods.hpp"
#include "plugin_api/reservation_book.hpp"
#include "plugin_api/seen_pods.hpp"
#include "plugin_api/store.hpp"

namespace fracpack::api {

using nlohmann::json;

/// The annotations a binder writes for a fraction: which devices, and the compute portion.
std::map<std::string, std::string> annotations_for(const PodRequest& pod, const GpuChoice& choice);

class ExtenderImpl final : public Extender {
 public:
  ExtenderImpl(ExtenderOptions options, std::shared_ptr<const Policy> policy, std::unique_ptr<api::Store> store);

  /// Loads objects and bindings from the store into the state.
  Status load();
  /// kFailedPrecondition for a verb that changes what the watch owns, when watching.
  [[nodiscard]] Status not_watching(const char* verb) const;

  Status apply(const std::vector<json>& objects, std::vector<std::string>* warnings) override;

  std::vector<std::size_t> nodes_to_apply(NodeNames names, const std::vector<const json*>& objects) override;

  Status remove(const std::string& kind, const std::string& name) override;

  Result<FilterAnswer> filter(const json& object, NodeNames nodes) override;

  Result<FilterAnswer> filter_all(const json& object, std::size_t max_nodes) override;

  Result<std::vector<HostScore>> prioritize(const json& object, NodeNames nodes) override;

  Result<BindAnswer> bind(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node) override;

  Result<std::map<std::string, std::vector<std::string>>> preempt(
      const json& object, const std::map<std::string, std::vector<std::string>>& candidates) override;

  Status release(const std::string& pod_key) override;

  Status sync(const std::vector<json>& bound_pods, bool cluster_empty, std::vector<std::string>* conflicts) override;

  Result<Explanation> explain(const json& object) override;

  LedgerSnapshot snapshot() const override;

  LedgerGauges gauges() const override;

  // The API server's view (extender_watch.cpp).
  void watch_listed(const std::string& kind, const std::vector<json>& objects, std::vector<std::string>* notes) override;
  void watch_changed(const std::string& kind, const std::vector<ApiEvent>& events, std::vector<std::string>* notes) override;
  void set_synced(bool synced) override;
  void set_act_gate(std::function<Status()> gate) override { act_gate_ = std::move(gate); }
  [[nodiscard]] Status may_act() const override { return act_gate_ ? act_gate_() : Status::ok(); }
  void on_retry_wanted(std::function<void(const std::vector<std::string>& pods)> hook) override { retry_wanted_ = std::move(hook); }
  void retry_pending() override;
  [[nodiscard]] bool synced() const override { return synced_; }
  [[nodiscard]] bool follows_api_server() const override { return options_.watching; }
  [[nodiscard]] std::vector<AssumedBind> assumed_binds() const override;
  void settle(const AssumedBind& bind, const json& pod) override;
  [[nodiscard]] std::string verify() const override;
  [[nodiscard]] std::vector<std::string> verify_against(const std::vector<json>& pods) const override;
  [[nodiscard]] GpuReservations* reservations() override { return book_.get(); }
  void sweep_reservations() override;
  std::vector<PodEviction> evictions() override;
  void new_term() override;

 private:
  Result<PodRequest> decode(const json& object) const;
  /// filter()'s and filter_all()'s answers. Caller holds mu_.
  FilterAnswer answer_listed(const PodRequest& pod, const std::optional<SchedulingState::GangDecision>& gang, NodeNames nodes);
  FilterAnswer answer_cluster(const PodRequest& pod, const std::optional<SchedulingState::GangDecision>& gang, std::size_t max_nodes);

  /// decode(), and the pod is kept for Bind. A pending pod of ours the state does not know yet
  /// counts in its queue's demand from now on (fair shares see what waits, as `place` does);
  /// pods dropped from the memory for Bind stop counting.
  Result<PodRequest> decode_seen(const json& object);

  /// A stored (or synced) binding into the state: the pod as stored, bound where it says.
  void observe_binding(const api::StoredBinding& b, std::vector<std::string>* conflicts);
  /// When `pod` (bound) started: its status.startTime, else the start the ledger holds for the
  /// same pod (uid) on the same node; none otherwise.
  [[nodiscard]] std::optional<std::int64_t> start_of(const PodRequest& pod) const;

  /// Applies a validated staging to the state and the node objects; returns displaced pods.
  std::vector<std::string> install(const api::StagedObjects& staged);

  /// Queue admission, for pods of ours.
  std::optional<queues::Refusal> admission(const PodRequest& pod) const;

  /// For a gang member: lapsed plans expire, and the gang is planned when it can be (takes the
  /// write lock itself). nullopt for other pods.
  std::optional<SchedulingState::GangDecision> plan_gang(const PodRequest& pod);
  /// A gang member that waits for its gang, or whose gang cannot be placed: every node fails with
  /// why. Caller holds mu_.
  bool refused_by_gang(const std::optional<SchedulingState::GangDecision>& gang, const std::vector<std::size_t>& nodes,
                       FilterAnswer& answer) const;
  /// When the pod's queue refuses it, every node in `nodes` fails with the queue's reason.
  /// Caller holds mu_.
  bool refused_by_queue(const PodRequest& pod, const std::vector<std::size_t>& nodes, FilterAnswer& answer) const;

  /// A pod the ledger already holds (its Bind succeeded here but the scheduler retries it, say)
  /// fits only where it is bound: that node passes, every other is unresolvable, so the retry
  /// binds it there again. Another pod of the same name (another UID) fits nowhere until the old
  /// binding is released. `list_failing`: list the other nodes with the reason. Caller holds mu_.
  bool pinned_to_binding(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_failing, FilterAnswer& answer) const;

  /// Bind of a pod the ledger already holds: the same pod to the same node is a repeat (the
  /// answer again); another node, or another pod of that name (another UID), is kAlreadyExists.
  /// nullopt when `key` is not bound. Caller holds mu_.
  std::optional<Result<BindAnswer>> bound_already(const std::string& key, const std::string& uid, const std::string& node);

  /// Each node's cached verdict into `answer`: failing nodes with their reason categories, and
  /// (with `list_passing`) the nodes that fit. Caller holds mu_.
  void add_verdicts(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_passing, FilterAnswer& answer);

  // The API server's view (extender_watch.cpp). Caller holds mu_ exclusively.
  void list_nodes(const std::vector<json>& objects, std::vector<std::string>* notes);
  void node_event(const ApiEvent& event, std::vector<std::string>* notes);
  void list_pods(const std::vector<json>& objects, std::vector<std::string>* notes);
  void pod_event(const ApiEvent& event, std::vector<std::string>* notes);
  /// The pod as the API server shows it now (not deleted).
  void pod_seen(const json& object, std::vector<std::string>* notes);
  /// Applies the Queues the API server has that form a valid tree (a queue whose parentQueue is
  /// missing, or in a cycle, waits out of it).
  void sync_queues(std::vector<std::string>* notes);
  void group_changes(const std::vector<json>& upserts, const std::vector<std::string>& removals, bool replace,
                     std::vector<std::string>* notes);
  /// The bind of `key` is seen in the API server (or will never be): no longer assumed, and out of the state file.
  void confirmed(const std::string& key);
  /// A bind from the state file that the first list after the start does not show: said, and
  /// confirmed() (its GPUs are the caller's to release).
  void unacknowledged(const std::string& key);
  void watch_listed_class(const json& object);
  // Reservation pods (extender_reservations.cpp). Caller holds mu_ exclusively.
  /// A reservation pod as the API server shows it: recorded in the book, never a pod of the state
  /// (its GPU is the fractions'), except while no fraction holds its GPU (then it holds it whole).
  void reservation_seen(const json& object);
  /// The reservation pod is deleted, or `finished` (the kubelet refused or evicted it: then it is
  /// deleted too). Fractions still on its GPU are said to be unprotected.
  void reservation_gone(const json& object, bool finished);
  /// A bound fraction's GPU groups and the ledger GPUs they mean (its groups' GPUs; for a group
  /// not known yet, the GPU the pod names, else the lowest free one; `gpus` empty when its node is
  /// not listed yet). Changes nothing: the claim is checked first (claim_edited).
  struct GroupPlan {
    std::vector<std::string> groups;
    std::vector<int> gpus;
  };
  /// nullopt: not a bound fraction with groups, or a group whose reservation pod is on another node.
  [[nodiscard]] std::optional<GroupPlan> plan_groups(const PodRequest& raw, const json& object) const;
  /// The plan learned: each group is on its GPU, and its reservation stops holding it whole (or
  /// the pod waits in unplaced_members_ for its node).
  void follow_groups(const std::string& key, const std::string& node, const GroupPlan& plan);
  /// The pod's GPU claim as the watch shows it bound now, recorded the first time it is seen bound
  /// on that node (a later view of the same pod is compared with it: claim_edited).
  void record_claim(const std::string& key, const json& object);
  /// A running pod whose GPU claim (what it asks, the GPUs, devices and groups it names; `raw`
  /// null: it no longer reads at all) differs from the one the watch first showed for the same
  /// pod on the same node: the edit is refused (docs/security.md, "What fracpack believes"): the
  /// pod keeps what it holds, the GPUs the edit names are fenced, the log and
  /// fracpack_pod_claim_edits_total say who edited what. True when it handled the pod (an edit
  /// stands); an edit undone lifts its fence and returns false.
  bool claim_edited(const std::string& key, const PodRequest* raw, const json& object);
  /// The ledger GPUs a running pod that does not decode can be read to claim: the indices in its
  /// fracpack.io/gpus and gpus.devices, and the GPUs of `node` whose reservation pods reported a
  /// UUID its gpus.devices names. Empty when nothing can be read (then its whole node is fenced).
  [[nodiscard]] std::vector<int> readable_gpus(const json& pod, const std::string& node) const;
  /// A fraction of `group` is seen: the group's reservation pod stops holding its GPU whole.
  void drop_whole_hold(const std::string& group);
  /// state_.forget(key), noting the room it frees (freed_room) when it held resources.
  void forget_held(const std::string& key);
  /// When nothing but its reservation pod holds ledger GPU `gpu` of `node`: the reservation pod
  /// holds it whole, and the leader's next sweep is asked for (retire_idle decides). On every replica.
  void check_idle(const std::string& node, int gpu);
  /// The leader's sweep only: each reservation pod whose GPU nothing else holds is retired when
  /// retirement() says so, from the ledger as it is now.
  void retire_idle();
  /// Why an idle GPU's reservation pod `e` should go now: it served (claimed); this deployment's
  /// pod made by another process and unclaimed for GpuReservationOptions::predecessor_grace; KAI's binder's,
  /// unclaimed for twice the reservation timeout. nullopt: it stays (another fracpack's, or young).
  [[nodiscard]] std::optional<std::string> retirement(const ReservationBook::Entry& e) const;
  /// GPUs of node `node` (-1: not known).
  [[nodiscard]] int gpu_count_of(const std::string& node) const;
  /// state_.forget(key), and check_idle on each GPU the pod held.
  void forget_pod(const std::string& key);
  /// Whether one of `gpus` of node `n` holds pods other than `key` and no reservation pod.
  [[nodiscard]] bool joins_unreserved(const std::string& key, std::size_t n, const std::vector<int>& gpus) const;
  /// A fraction's Bind: its reservation claims (or joins_unreserved) into `answer`. kUnschedulable
  /// (nothing claimed) while one of its GPUs' reservation pods is being deleted.
  Status reserve(BindAnswer& answer, const PodRequest& pod);
  /// The claims of `answer` that were to create a reservation pod are given up (their groups go).
  void give_up_claims(BindAnswer& answer);
  /// Whether the pod of uid `uid`, `key`, is held bound on `node` (a reservation pod's member that runs).
  [[nodiscard]] bool member_runs(const std::string& uid, const std::string& key, const std::string& node) const;
  /// The members `group`'s reservation pod names whose pods are gone (at most 64): dropped with the next member written.
  [[nodiscard]] std::vector<std::string> stale_members(const std::string& group) const;
  /// sweep_reservations() with mu_ held.
  void sweep_locked();
  /// The lowest idle ledger GPU of node `n` no reservation names, and not in `taken`.
  [[nodiscard]] std::optional<int> free_gpu(std::size_t n, const std::vector<int>& taken = {}) const;
  /// Consolidation's plan for `pod` alone (SchedulingState::plan_consolidation) when it is ours,
  /// preemptible and in no gang of minMember > 1; nullopt otherwise or when none exists. Caller
  /// holds mu_ exclusively (the search changes the ledger for a moment).
  std::optional<queues::ConsolidationPlan> consolidation_for(const PodRequest& pod);
  /// Explain for a gang member not planned yet: what Filter's gang plan would answer
  /// (SchedulingState::gang_outlook), put before `e`'s answer for the pod alone; unschedulable
  /// when the gang waits or is refused. Caller holds mu_ exclusively (the outlook places for a moment).
  void explain_gang(const PodRequest& pod, Explanation& e);
  /// Preempt's answers node by node, where the search over every offered node named a victim
  /// kube-scheduler did not offer there (`victims_somewhere`), or found none: victims on each
  /// node alone, else the pods consolidation's plan moves off it. Caller holds mu_ exclusively.
  std::map<std::string, std::vector<std::string>> node_by_node(const PodRequest& pod,
                                                               const std::map<std::string, std::vector<std::string>>& candidates,
                                                               bool victims_somewhere);
  /// Preempt for a member of a gang that waits for its minimum (KAI reclaims for the whole job,
  /// docs/queues.md rule 12 item 7): every victim of the gang is left to the leader to delete,
  /// and the gang's first member alone is answered, on the node it lands on (kube-scheduler's
  /// nomination then agrees with the gang's plan once the victims are gone). Caller holds mu_
  /// exclusively.
  std::map<std::string, std::vector<std::string>> gang_preempt(const PodRequest& pod, const queues::Job& gang,
                                                               const std::map<std::string, std::vector<std::string>>& candidates);
  /// Preempt's answer on `node` for the pods of a decision that must leave (`leaving`, on any
  /// node): the uids of those on `node` that kube-scheduler offered there; the others, and the
  /// rest of each victim's job, are left to the leader to delete (victims_to_evict_). nullopt
  /// (nothing recorded) when it offered none of them there. Caller holds mu_ exclusively.
  std::optional<std::vector<std::string>> answer_on(const std::string& node, const std::vector<std::string>& leaving,
                                                    const std::vector<std::string>& offered, const std::string& for_pod);
  /// Records `victims` and the rest of each one's job (SchedulingState::victim_jobs) for the
  /// leader to delete (victims_to_evict_, evictions()), with `reason` for the log. Caller holds mu_.
  void evict_later(const std::vector<std::string>& victims, const std::string& reason);
  /// The uids of `victims` (pod keys) when every one is among `offered` (kube-scheduler's
  /// candidates on a node), else nullopt: Preempt answers a subset of what it was offered.
  [[nodiscard]] std::optional<std::vector<std::string>> offered_uids(const std::vector<std::string>& victims,
                                                                     const std::vector<std::string>& offered) const;
  // The ledger against the API server's pods (extender_compare.cpp). Caller holds mu_.
  /// A pod bound in the API server: held there, as the same pod, on the GPUs its fracpack.io/gpus names.
  /// Of the listed reservation pods of this deployment: member uid → node → the ledger indices
  /// (fracpack.io/gpu) of those that name it (kReservationMemberPrefix).
  using RecordedMembers = std::map<std::string, std::map<std::string, std::vector<int>>>;
  [[nodiscard]] RecordedMembers recorded_members(const std::vector<json>& pods) const;
  void compare_bound(const std::string& key, const std::string& node, const json& pod, const RecordedMembers& recorded,
                     std::vector<std::string>& out) const;
  /// A running pod the listed reservation pods record a member: held on their GPUs, else a
  /// difference; false when no record names it (its annotations are compared then).
  bool compare_recorded(const std::string& key, const std::string& node, const std::string& uid, const Allocation& a,
                        const RecordedMembers& members, std::vector<std::string>& out) const;
  /// A reservation pod: its group's, and on the ledger GPU its fracpack.io/gpu names (ours).
  void compare_reservation(const json& pod, std::vector<std::string>& out) const;
  /// An answer that passes no node, refused by no check before the nodes: kNodes.
  static void mark_nodes_refusal(FilterAnswer& answer);
  /// A Filter before the first full list: every node fails, saying why.
  bool syncing(const std::vector<std::size_t>& nodes, FilterAnswer& answer) const;
  // Refused pods asked for again (extender_retries.cpp).
  /// A Filter answer that passes no node: the pod is remembered (RecentRefusals), when following
  /// the API server. Caller holds mu_ (shared is enough).
  void note_refusal(const PodRequest& pod, const FilterAnswer& answer);
  /// What is being applied freed room: refusals within `within` (0: retry_refused_within) are
  /// retried when it is done. Caller holds mu_ exclusively.
  void freed_room(std::chrono::milliseconds within = std::chrono::milliseconds(0));
  /// The pods refused within the freed window that still wait and would now be admitted and fit
  /// somewhere, newest refusal first (at most 64; one check per pod shape and queue, at most 256);
  /// the window is reset. Caller holds mu_ exclusively.
  std::vector<std::string> take_retries();
  /// Every pending pod of ours (at most 1024) counts as just refused and room as freed: the next
  /// retry_refused asks for those that now fit, though fracpack never refused them (kube-scheduler
  /// did, or no replica could act). Caller holds mu_ exclusively.
  void mark_pending_refused();
  /// plan_gang said "waiting for members" to `pod`: remembered for gang_retries. Caller holds mu_
  /// exclusively.
  void note_gang_waiting(const PodRequest& pod);
  /// Of the pods told their gang waits (within kQueueRetryWindow, at most 4096), for each gang
  /// that could be planned now, the earliest of its planners (SchedulingState::gang_planners)
  /// among them; that gang's entries are then forgotten (asked once). Besides, each pod told so
  /// before the watch showed it, once it does: its reason then counts it (asked once). Caller
  /// holds mu_ exclusively.
  std::vector<std::string> gang_retries();
  /// take_retries(), then `lock` (held exclusively) is released and on_retry_wanted called.
  void retry_refused(std::unique_lock<std::shared_mutex>& lock);

  ExtenderOptions options_;
  std::shared_ptr<const Policy> policy_;
  std::unique_ptr<api::Store> store_;
  mutable std::shared_mutex mu_;
  SchedulingState state_;
  std::map<std::string, json> node_objects_;  ///< v1 Nodes as received: what a Node sent again is compared with
  api::BindingLog bindings_;                  ///< what Bind and Sync recorded, in order (the store's copy)
  VerdictCache verdicts_;                     ///< Filter/Prioritize answers per pod shape and node, refreshed per node change
  api::NameResolver names_;                   ///< candidate lists → positions, for lists sent again
  api::SeenPods seen_;
  std::atomic<bool> synced_{true};
  std::function<void(const std::vector<std::string>&)> retry_wanted_;
  std::function<Status()> act_gate_;  ///< leader election; empty: this replica always acts
  api::RecentRefusals refusals_;
  /// Under mu_: how far back refusals are retried after the change being applied (0: it freed no
  /// room; retry_refused_within; kQueueRetryWindow after a Queue edit or the first full list).
  std::chrono::milliseconds room_freed_{0};
  /// A pod plan_gang told its gang waits for members: when, and whether the watch showed it
  /// pending then (if not, its reason was "not yet seen"; gang_retries asks for it once it is).
  struct GangWait {
    std::chrono::steady_clock::time_point at;
    bool seen = false;
  };
  /// Under mu_: pods plan_gang told their gang waits for members (gang_retries).
  std::map<std::string, GangWait> gang_waiting_;
  /// Victims Preempt decided that kube-scheduler will not delete (evictions()), by pod key, each
  /// with when the decision lapses.
  struct VictimEviction {
    PodEviction eviction;
    std::chrono::steady_clock::time_point until;
  };
  std::map<std::string, VictimEviction> victims_to_evict_;
  /// How long a victim decided by Preempt stays to delete: kube-scheduler deletes its share at
  /// once; a decision older than this is stale (the ledger has moved on).
  static constexpr std::chrono::seconds kVictimEvictionHold{30};
  struct Assumed {
    std::string uid;
    std::string node;
    std::chrono::steady_clock::time_point deadline;
    /// Read from the state file at start: written before its Binding was sent, perhaps never
    /// acknowledged. The first pod list after the start (a fresh read) settles it at once.
    bool from_store = false;
  };
  std::map<std::string, Assumed> assumed_;                   ///< binds not yet seen in the API server
  api::ReleasedPods released_;                               ///< for Release retries (under mu_)
  std::map<std::string, queues::QueueSpec> api_queues_;      ///< every Queue the API server has that decodes
  std::set<std::string> api_groups_;                         ///< PodGroups the API server has
  std::map<std::string, std::string> invalid_groups_;        ///< PodGroups the API server has that do not decode → why
  std::map<std::string, std::string> waiting_queues_;        ///< Queues out of the tree → their missing parent
  std::unique_ptr<ReservationBook> book_;                    ///< reservation pods; null when off
  /// Bound fractions whose groups' GPUs were not known when seen (their node not listed yet):
  /// pod → groups, learned by the sweep from where the state holds them.
  std::map<std::string, std::vector<std::string>> unplaced_members_;
  /// Running pods whose claim edit stands: pod → what the edit names (said once per edit).
  std::map<std::string, std::string> claim_edits_;
  struct RecordedClaim {
    std::string uid;
    std::string node;
    std::string text;  ///< claim_text: the claim as first seen bound
  };
  std::map<std::string, RecordedClaim> recorded_claims_;  ///< running pods' claims as the watch first showed them
  /// uids of pods whose own GPU groups the reservation pods' record overrode: said once each
  /// (plan_groups, under mu_ held exclusively; forgotten past 4,096).
  mutable std::set<std::string> overridden_members_;
  /// Edits refused since start, by who wrote them (managedFields' manager; at most 64 writers).
  std::map<std::string, std::uint64_t> claim_edit_writers_;
};

}  // namespace fracpack::api
