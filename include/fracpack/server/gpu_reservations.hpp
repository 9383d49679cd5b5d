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
// When the GPU's last fraction leaves, the reservation pod is deleted. Reservation pods count in
// no queue and are never victims. docs/kube-scheduler.md, "Shared GPUs on the node: reservation pods", has the whole story.
#pragma once

#include <chrono>
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
};

/// One shared GPU a Bind needs: its group and reservation pod, and the physical GPU once known.
struct ReservationClaim {
  std::string node;
  int gpu = 0;         ///< the ledger's index on the node
  std::string group;   ///< runai-gpu-group value
  std::string pod;     ///< the reservation pod's name (in GpuReservationOptions::ns)
  std::string device;  ///< the reported GPU ("" until reported)
  bool create = false; ///< no reservation pod exists yet: the caller creates it
};

/// The binder's side of the reservations (thread-safe; never waits on the scheduling state).
class GpuReservations {
 public:
  virtual ~GpuReservations() = default;
  [[nodiscard]] virtual const GpuReservationOptions& options() const = 0;
  /// The reservation of ledger GPU `gpu` on `node`: the live one, or a new one (create = true)
  /// that the caller must create. Concurrent claims of one GPU get the same group.
  virtual ReservationClaim claim(const std::string& node, int gpu) = 0;
  /// Waits until the group's reservation pod reports its GPU (seen through the watch) and returns
  /// it. kInternal naming the pod when `deadline` passes first, or when the reservation pod is
  /// gone meanwhile.
  virtual Result<std::string> await_device(const std::string& group, std::chrono::steady_clock::time_point deadline) = 0;
  /// The claim's reservation pod could not be created: its group goes, and Binds waiting on it
  /// give up. (A reservation pod that exists is deleted once its GPU is idle: a Bind that failed
  /// releases its GPUs, and the core retires what no fraction holds.)
  virtual void creation_failed(const ReservationClaim& claim) = 0;
  /// Reservation pods to delete now (their GPU is idle, or their Bind failed), by name.
  virtual std::vector<std::string> take_deletions() = 0;
  /// Whether take_deletions() has something.
  [[nodiscard]] virtual bool deletions_due() const = 0;
  /// A deletion failed (not 404): asked again at the next tick.
  virtual void deletion_failed(const std::string& pod) = 0;
  /// A deletion was answered 404: the pod is gone.
  virtual void deleted(const std::string& pod) = 0;
};

}  // namespace fracpack
