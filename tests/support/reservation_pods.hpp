// Reservation pods for the extender core's tests: KAI's format with fracpack's annotations (or
// KAI's binder's, without them), bound fractions behind them, a core following the API server.
// Tests only (doctest).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "plugin_api/reservation_book.hpp"
#include "support/builders.hpp"

namespace fracpack::test {

using namespace std::chrono_literals;

/// Reservations on, this deployment the default owner; no grace after a term starts (tests that
/// check the grace set it).
inline GpuReservationOptions reservation_options(std::chrono::seconds timeout = 40s) {
  GpuReservationOptions o;
  o.enabled = true;
  o.timeout = timeout;
  o.predecessor_grace = 0s;
  return o;
}

/// The reservation pod of `claim` as the API server would show it, reported (`device` set) or not.
inline json reservation(const ReservationClaim& claim, const std::string& device = "") {
  json pod = api::reservation_pod(reservation_options(), claim);
  pod["metadata"]["uid"] = "u-" + claim.pod;
  if (!device.empty()) pod["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = device;
  return pod;
}

/// A reservation pod KAI's binder made: its format, without fracpack's annotations.
inline json kai_reservation(const ReservationClaim& claim, const std::string& device = "") {
  json pod = reservation(claim, device);
  for (const char* key : {"fracpack.io/reservation-owner", "fracpack.io/created-by", "fracpack.io/gpu"}) pod["metadata"]["annotations"].erase(key);
  return pod;
}

/// The pods of take_deletions(), by name.
inline std::vector<std::string> deletions(GpuReservations& book) {
  std::vector<std::string> out;
  for (const auto& d : book.take_deletions()) out.push_back(d.pod);
  return out;
}

/// A core following the API server with reservations on; `creator` names its process (a replica).
inline std::unique_ptr<Extender> following(std::chrono::seconds timeout = 40s, const std::string& creator = "fracpack-0/a1") {
  ExtenderOptions o;
  o.watching = true;
  o.reservation = reservation_options(timeout);
  o.reservation.creator = creator;
  auto core = Extender::open(o);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  REQUIRE(core->get()->reservations() != nullptr);
  return std::move(*core);
}

inline json fraction(const std::string& name, const std::string& memory) {
  PodBuilder p(name);
  p.uid("u-" + name).gpu_memory(memory);
  p.obj["spec"]["schedulerName"] = "kai-scheduler";
  return p.obj;
}

/// `pod` as the API server shows it after fracpack's Bind: on the claim's node, its group label,
/// the reported device and the ledger's index (and, `groups_annotation`, the groups annotation
/// the Binding writes).
inline json bound_behind(json pod, const ReservationClaim& claim, const std::string& device, bool groups_annotation = false) {
  pod["spec"]["nodeName"] = claim.node;
  pod["metadata"]["labels"]["runai-gpu-group"] = claim.group;
  pod["metadata"]["annotations"]["nvidia.com/container.main.gpus.devices"] = device;
  pod["metadata"]["annotations"]["fracpack.io/gpus"] = std::to_string(claim.gpu);
  if (groups_annotation) pod["metadata"]["annotations"]["fracpack.io/gpu-groups"] = claim.group;
  return pod;
}

/// A whole-GPU pod bound on `node`, holding the ledger's GPU 0.
inline json bound_whole(const std::string& name, const std::string& node) {
  PodBuilder p(name);
  p.uid("u-" + name).whole(1);
  p.obj["spec"]["nodeName"] = node;
  p.obj["metadata"]["annotations"]["fracpack.io/gpus"] = "0";
  return p.obj;
}

struct Held {
  std::string node;
  std::vector<int> gpus;
  bool ours;
  bool operator==(const Held&) const = default;
};
inline std::map<std::string, Held> held(const Extender& core) {
  std::map<std::string, Held> out;
  for (const auto& b : core.snapshot().bindings) out[b.pod] = {b.node, b.gpus, b.ours};
  return out;
}

/// A node of `gpus` × 80 GiB listed, the core synced, and `name` (30Gi) filtered and bound: its claim.
inline ReservationClaim first_fraction_bound(Extender& core, const std::string& name, int gpus = 2) {
  core.watch_listed("Node", {nvf("n", gpus, 81920).obj}, nullptr);
  core.watch_listed("Pod", {}, nullptr);
  core.set_synced(true);
  REQUIRE(core.filter(fraction(name, "30Gi"), std::vector<std::string>{"n"}).is_ok());
  auto bound = core.bind("default", name, "u-" + name, "n");
  REQUIRE(bound.is_ok());
  REQUIRE(bound->reservations.size() == 1);  // claimed with the ledger's bind
  CHECK(bound->reservations.front().gpu == bound->choice.gpus.at(0));
  return bound->reservations.front();
}

}  // namespace fracpack::test
