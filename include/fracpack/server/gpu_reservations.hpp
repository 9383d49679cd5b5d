// Shared GPUs held at the kubelet: one reservation pod per shared GPU, in KAI's own format
// (pkg/binder/binding/resourcereservation/resource_reservation.go), so that a cluster moving
// between KAI and fracpack reads the same objects.
//
// A fractional pod requests no `nvidia.com/gpu`, so the device plugin sees its GPU as free and
// may hand it to the next whole-GPU pod. Before the first fraction of a GPU binds, a reservation
// pod is created on the node (spec.nodeName preset, `nvidia.com/gpu: 1`, namespace
// `kai-resource-reservation`, label `runai-gpu-group: <group>`); the device plugin gives it one
// physical GPU, which the reservation pod reports in its annotation `run.ai/reserve_for_gpu_index`
// (a GPU UUID). Every fraction of that GPU carries the group label and names the reported GPU in
// `nvidia.com/container.<ctr>.gpus.devices`; the ledger's own index goes to `fracpack.io/gpus`, the
// groups to `fracpack.io/gpu-groups`.
// fracpack's reservation pods also say which deployment owns them, which process made them, and
// the ledger index they hold, so every replica reads the same ledger from them. When the GPU's
// last fraction leaves, the leader deletes the reservation pod; followers never decide a
// deletion. Reservation pods count in no queue and are never victims. docs/kube-scheduler.md, "Shared GPUs on the node: reservation pods", has the whole story.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/core/status.hpp"

namespace fracpack {

/// Labels and annotations of KAI's resource reservation (pkg/common/constants).
inline constexpr std::string_view kGpuGroupLabel = "runai-gpu-group";
/// A fraction spread over several GPUs (gpu-fraction-num-devices) carries one
/// `runai-gpu-group/<group>: <group>` label per GPU instead (KAI GetMultiFractionGpuGroupLabel).
inline constexpr std::string_view kGpuGroupLabelPrefix = "runai-gpu-group/";
// fracpack's Binding of a fraction carries its groups too (k8s::kGpuGroupsAnnotation,
// fracpack/core/labels.hpp); the label follows the Binding off the Bind's path.
/// Written by the reservation pod itself once the device plugin gave it a GPU: that GPU's UUID.
inline constexpr std::string_view kReservedGpuAnnotation = "run.ai/reserve_for_gpu_index";
/// fracpack's own annotations on the reservation pods it creates (KAI's binder writes none), so
/// that every replica, and a restarted one, reads the same facts instead of guessing them:
/// which fracpack deployment owns the pod (GpuReservationOptions::owner), which process created
/// it (GpuReservationOptions::creator), and the ledger index of the GPU it holds on its node.
/// Only the reservation namespace's writers (fracpack and the pod's own program) can set them:
/// docs/security.md, "What fracpack believes".
inline constexpr std::string_view kReservationOwnerAnnotation = "fracpack.io/reservation-owner";
inline constexpr std::string_view kReservationCreatorAnnotation = "fracpack.io/created-by";
inline constexpr std::string_view kReservationGpuAnnotation = "fracpack.io/gpu";
/// The group's members, one annotation each on its reservation pod: `members.fracpack.io/<pod
/// uid>: <namespace>/<name>`, written by the leader after each Binding into the group (pods gone
/// are dropped then): a record of Bindings made, never of Binds attempted. A fraction's own
/// annotations and labels are its tenant's to edit; this record is not: a running pod it names is
/// the group's member on every replica, a restarted one too, whatever the pod now says, and its
/// group's reservation pod is never retired while that pod runs.
inline constexpr std::string_view kReservationMemberPrefix = "members.fracpack.io/";

struct GpuReservationOptions {
  bool enabled = false;  ///< serve --gpu-reservation kai (default when following an API server)
  std::string ns = "kai-resource-reservation";               ///< KAI's resourceReservation.namespace
  std::string service_account = "kai-resource-reservation";  ///< its serviceAccount
  std::string app_label = "kai-resource-reservation";        ///< its `app` label
  /// The program that reports the GPU (KAI's cmd/resourcereservation); match your KAI release.
  std::string image = "ghcr.io/nvidia/kai-scheduler/resource-reservation";
  /// spec.runtimeClassName of the reservation pods ("" = none): `nvidia` where the GPU operator's
  /// runtime is not the node's default (KAI's resourceReservation.runtimeClassName).
  std::string runtime_class;
  /// How long a Bind waits for a new reservation pod's report (KAI's allocation timeout: 40 s).
  std::chrono::seconds timeout{40};
  /// Names the fracpack deployment whose reservation pods these are (kReservationOwnerAnnotation):
  /// its Lease, "namespace/name". Replicas of one deployment share it; a pod another owner made
  /// is never deleted, and one without an owner (KAI's binder's) is a stranger.
  std::string owner = "kube-system/fracpack";
  /// Names this process (kReservationCreatorAnnotation): "identity/instance", the instance drawn
  /// at start, so a restarted replica tells its predecessor's pods from its own.
  std::string creator;
  /// How long a reservation pod this deployment owns but another process created (a predecessor
  /// killed mid-Bind, a replica that led before) may stand idle and unclaimed before the leader
  /// deletes it: a Binding that process sent just before it stopped has landed by then.
  std::chrono::seconds predecessor_grace{5};
};

/// A reservation pod to delete: its name in GpuReservationOptions::ns, and its uid when known
/// (the delete's precondition: a pod made since under that name is not touched).
struct ReservationDeletion {
  std::string pod;
  std::string uid;
  bool operator==(const ReservationDeletion&) const = default;
};

/// One shared GPU a Bind needs: its group and reservation pod, and the physical GPU once known.
struct ReservationClaim {
  std::string node;
  int gpu = 0;         ///< the ledger's index on the node
  std::string group;   ///< runai-gpu-group value
  std::string pod;     ///< the reservation pod's name (in GpuReservationOptions::ns)
  std::string device;  ///< the reported GPU ("" until reported)
  bool create = false; ///< no reservation pod exists yet: the caller creates it
  /// The GPU's reservation pod is being deleted (its DELETE is sent) and a GPU gets only one at a
  /// time: nothing is claimed, and the Bind is refused until the watch shows it gone.
  bool blocked = false;
};

/// The binder's side of the reservations (thread-safe; never waits on the scheduling state).
class GpuReservations {
 public:
  virtual ~GpuReservations() = default;
  [[nodiscard]] virtual const GpuReservationOptions& options() const = 0;
  /// The reservation of ledger GPU `gpu` on `node`: the live one (one the leader decided to delete
  /// and has not asked the API server to yet is kept after all), or a new one (create = true)
  /// that the caller must create, or none while the GPU's reservation pod is being deleted
  /// (blocked = true). Concurrent claims of one GPU get the same group.
  virtual ReservationClaim claim(const std::string& node, int gpu) = 0;
  /// Waits until the group's reservation pod reports its GPU (seen through the watch) and returns
  /// it. kInternal naming the pod when `deadline` passes first, or when the reservation pod is
  /// gone meanwhile.
  virtual Result<std::string> await_device(const std::string& group, std::chrono::steady_clock::time_point deadline) = 0;
  /// await_device without waiting: `done` gets the reported GPU once the watch shows it, or
  /// kInternal when the reservation pod goes first; at once when either is known now. It is
  /// called with the book's lock held, from the watch's thread or the caller's: it must only hand
  /// the work on, never call back into the book. Returns an id for forget_waiter().
  virtual std::uint64_t when_reported(const std::string& group, std::function<void(Result<std::string>)> done) = 0;
  /// `done` of when_reported(id) will not be called (the caller's own deadline passed).
  virtual void forget_waiter(std::uint64_t id) = 0;
  /// The error of a reservation pod of `group` that did not report within the timeout.
  [[nodiscard]] virtual Status report_timeout(const std::string& group) const = 0;
  /// The claim's reservation pod could not be created: its group goes, and Binds waiting on it
  /// give up. (A reservation pod that exists is deleted once its GPU is idle: a Bind that failed
  /// releases its GPUs, and the core retires what no fraction holds.)
  virtual void creation_failed(const ReservationClaim& claim) = 0;
  /// Reservation pods to delete now. Only the leader asks, right after Extender::sweep_reservations()
  /// decided them from its ledger as it is then: nothing a replica noticed while it followed is
  /// acted on later.
  virtual std::vector<ReservationDeletion> take_deletions() = 0;
  /// Whether the leader should sweep now: a GPU went idle, or a pod is to be deleted.
  [[nodiscard]] virtual bool sweep_due() const = 0;
  /// A deletion failed (not 404; a 409 says another pod has the name now): the pod may still be
  /// going, so claims of its GPU stay blocked; asked again at the leader's next sweep, and decided
  /// again from the ledger when a new term of leading starts (new_term).
  virtual void deletion_failed(const ReservationDeletion& deletion) = 0;
  /// A deletion was answered 404: the pod is gone.
  virtual void deleted(const std::string& pod) = 0;
  /// A deletion was refused 409 (its uid precondition): the pod of that name is another one now,
  /// and the one decided is gone. Nothing is going: claims of its GPU are no longer blocked, and
  /// the leader's next sweep decides again from what the watch shows.
  virtual void deletion_refused(const ReservationDeletion& deletion) = 0;
  /// This replica took or lost the lead: decisions of the term before are dropped (a deletion not
  /// sent, or failed, is decided again from the ledger by the next leader's sweep), and nothing
  /// this deployment made is retired for GpuReservationOptions::predecessor_grace from now, so a
  /// Binding the previous leader sent just before it stopped lands on a GPU still reserved.
  virtual void new_term() = 0;
};

}  // namespace fracpack
