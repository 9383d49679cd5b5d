// Two fracpack replicas following kube-rig through networks of their own (a proxy each, with
// latency on the leader's Bindings), a device agent playing the kubelet, the real kube-scheduler
// calling whichever replica leads: failover changes nothing (docs/ha.md). A GPU a follower saw
// idle before the leader's last Binding keeps its reservation pod after failover; a follower's
// ledger equals the leader's through churn; a tenant's edit of its running pod's GPU claim frees
// nothing; a pod kube-scheduler failed on while no replica led is nudged by the new leader; and
// ten kill -9s of the leader leave every invariant true in the API server's objects.
#include <random>

#include <doctest/doctest.h>

#include "support/cluster_invariants.hpp"
#include "support/e2e_cluster.hpp"
#include "support/require_kube_rig.hpp"

namespace fracpack::test {
namespace {

using namespace std::chrono_literals;

Cluster::Options two_replicas() {
  Cluster::Options o;
  o.replicas = 2;
  o.proxies = true;
  return o;
}

bool bound(const Cluster& c, const std::string& key, std::chrono::milliseconds within = 20s) {
  return KubeRig::wait_until([&] { return !c.api().node_of(key).empty(); }, within);
}

/// The follower (the replica not holding the Lease).
std::size_t follower_of(const Cluster& c) { return c.leader_index() == 0 ? 1 : 0; }

/// What a whole-node check sees: the API server's invariants and the kubelet's, each listed.
void check_invariants(const Cluster& c, const char* when) {
  const auto broken = api_invariants(c.api());
  CHECK_MESSAGE(broken.empty(), when << ": " << json(broken).dump());
  const auto suffered = c.agent().violations();
  CHECK_MESSAGE(suffered.empty(), when << ": " << json(suffered).dump());
}

/// Replica `i`'s /debug/verify: its ledger against one rebuilt from scratch and the API server's pods.
void check_verify(const Cluster& c, std::size_t i) {
  const json answer = c.replica_get(i, "/debug/verify");
  CHECK_MESSAGE(answer.is_string(), "replica " << i << ": " << answer.dump());
}

/// A random Binding latency up to `most` for a proxy (seeded; proxies call it from many threads).
std::function<std::chrono::milliseconds()> latency(std::uint64_t seed, int most) {
  auto random = std::make_shared<std::pair<std::mutex, std::mt19937_64>>();
  random->second.seed(seed);
  return [random, most] {
    std::lock_guard lock(random->first);
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(0, most)(random->second));
  };
}

/// A pod of a mixed workload: mostly fractions of 8 to 40 GiB, some of one or two whole GPUs.
json churn_pod(const std::string& name, std::mt19937_64& random) {
  const int kind = std::uniform_int_distribution<int>(0, 9)(random);
  if (kind < 7) return fraction_pod(name, fmt::format("{}Gi", 8 * std::uniform_int_distribution<int>(1, 5)(random)));
  return gpu_pod(name, kind == 9 ? 2 : 1);
}

TEST_CASE("a new leader keeps the reservation of a GPU its watch saw idle before the old leader's last Binding") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 1), two_replicas());
  const auto leader = static_cast<std::size_t>(c.leader_index());
  const std::size_t follower = follower_of(c);
  REQUIRE(c.api().create(fraction_pod("f1", "30Gi")) == 201);
  REQUIRE_MESSAGE(bound(c, "default/f1"), c.api().failed_scheduling("default/f1"));
  REQUIRE(reservation_pods(c.api()).size() == 1);
  // The leader binds f2 beside f1, and its Binding waits on the way to the API server ...
  c.proxy(leader).hold(true);
  REQUIRE(c.api().create(fraction_pod("f2", "30Gi")) == 201);
  REQUIRE(KubeRig::wait_until([&] { return c.proxy(leader).held() == 1; }, 20s));
  // ... while f1 is deleted: the follower sees its GPU idle (the leader sees f2 there).
  REQUIRE(c.api().delete_pod("default/f1") == 200);
  REQUIRE(KubeRig::wait_until([&] { return !c.replica_ledger(follower).contains("default/f1"); }, 10s));
  c.proxy(leader).hold(false);
  REQUIRE_MESSAGE(bound(c, "default/f2"), c.api().failed_scheduling("default/f2"));
  REQUIRE(KubeRig::wait_until([&] { return c.replica_ledger(follower).contains("default/f2"); }, 10s));
  // The leader is killed; the follower takes over, and sweeps a few times.
  c.kill_replica(leader);
  REQUIRE(KubeRig::wait_until([&] { return c.leader_index() == static_cast<int>(follower); }, 15s));
  std::this_thread::sleep_for(7s);  // past the grace a new term gives the old leader's pods (5 s), and a sweep
  CHECK(reservation_pods(c.api()).size() == 1);  // f2 still runs there: its GPU is still held at the kubelet
  check_invariants(c, "after failover");
  check_verify(c, follower);
  // The GPU is f2's: a whole-GPU pod stays pending, and the kubelet never hands it f2's device.
  REQUIRE(c.api().create(gpu_pod("w", 1)) == 201);
  std::this_thread::sleep_for(3s);
  CHECK(c.api().node_of("default/w").empty());
  check_invariants(c, "after a whole-GPU pod");
}

TEST_CASE("through churn with latency between the leader's Bindings, the follower's ledger equals the leader's; failover keeps every invariant") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(4, 8), two_replicas());
  c.proxy(0).delay(latency(1, 600));
  c.proxy(1).delay(latency(2, 600));
  std::mt19937_64 random(42);
  std::vector<std::string> created;
  for (int i = 0; i < 90; ++i) {
    const std::string name = fmt::format("p{:03}", i);
    REQUIRE(c.api().create(churn_pod(name, random)) == 201);
    created.push_back("default/" + name);
    if (i % 3 == 2) {  // every third pod, one made earlier goes
      const std::string gone = created[std::uniform_int_distribution<std::size_t>(0, created.size() - 1)(random)];
      (void)c.api().delete_pod(gone);
    }
    std::this_thread::sleep_for(100ms);
  }
  const std::size_t leader = static_cast<std::size_t>(c.leader_index());
  const std::size_t follower = follower_of(c);
  c.converged(30s);  // the leader's ledger equals the API server's pods
  const bool same = KubeRig::wait_until([&] { return c.replica_ledger(follower) == c.replica_ledger(leader); }, 10s);
  CHECK_MESSAGE(same, "follower " << json(c.replica_ledger(follower)).dump() << "\nleader " << json(c.replica_ledger(leader)).dump());
  check_verify(c, leader);
  check_verify(c, follower);
  check_invariants(c, "after churn");
  c.kill_replica(leader);
  REQUIRE(KubeRig::wait_until([&] { return c.leader_index() == static_cast<int>(follower); }, 15s));
  for (int i = 0; i < 30; ++i) REQUIRE(c.api().create(churn_pod(fmt::format("q{:03}", i), random)) == 201);
  c.converged(30s);
  check_invariants(c, "after failover and 30 more pods");
  check_verify(c, follower);
}

TEST_CASE("a tenant's edit of its running fraction's GPU claim frees nothing: its GPU stays reserved, the edit's GPU is fenced") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 8), two_replicas());
  REQUIRE(c.api().create(fraction_pod("f", "30Gi")) == 201);
  REQUIRE_MESSAGE(bound(c, "default/f"), c.api().failed_scheduling("default/f"));
  const auto [group, device] = group_and_device(c.api(), "default/f");
  const std::string index = c.api().pod("default/f").value(json::json_pointer("/metadata/annotations/fracpack.io~1gpus"), "");
  REQUIRE(!index.empty());
  const std::string other = std::to_string((std::stoi(index) + 4) % 8);
  // With patch rights on its own pod, the tenant points it at another GPU and drops its group.
  const json patch = {{"metadata",
                       {{"annotations", {{"fracpack.io/gpus", other}, {"nvidia.com/container.main.gpus.devices", "GPU-gpu-0-7"},
                                         {"fracpack.io/gpu-groups", nullptr}}},
                        {"labels", {{"runai-gpu-group", nullptr}}}}}};
  REQUIRE(c.api().send("PATCH", "/api/v1/namespaces/default/pods/f", patch, "application/merge-patch+json") == 200);
  std::this_thread::sleep_for(3s);
  CHECK(reservation_pods(c.api()).size() == 1);
  for (std::size_t r = 0; r < c.replica_count(); ++r) {
    const auto ledger = c.replica_ledger(r);
    REQUIRE(ledger.contains("default/f"));
    CHECK(ledger.at("default/f").second == std::vector<int>{std::stoi(index)});
  }
  const std::size_t leader = static_cast<std::size_t>(c.leader_index());
  const json metrics = c.replica_get(leader, "/metrics");
  REQUIRE(metrics.is_string());
  CHECK(metrics.get<std::string>().find("fracpack_pods_claim_edited 1") != std::string::npos);
  CHECK(metrics.get<std::string>().find("fracpack_pod_claim_edits_total{writer=") != std::string::npos);
  // Eight whole-GPU pods: f's GPU and the one the edit names are out, so six bind.
  for (int i = 0; i < 8; ++i) REQUIRE(c.api().create(gpu_pod(fmt::format("w{}", i), 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return c.truth().size() == 7; }, 30s));
  std::this_thread::sleep_for(2s);
  CHECK(c.truth().size() == 7);  // f and six whole-GPU pods
  const auto suffered = c.agent().violations();
  CHECK_MESSAGE(suffered.empty(), json(suffered).dump());  // no whole-GPU pod got f's device
  // After a failover the new leader believes the same, though it restarted while the edit stood
  // (its first view of f is the edited one): the reservation pod's record of its members holds f
  // where it runs.
  const std::size_t follower = follower_of(c);
  c.kill_replica(follower);
  c.restart_replica(follower);
  REQUIRE(KubeRig::wait_until([&] { return c.replica_ledger(follower).contains("default/f"); }, 15s));
  CHECK(c.replica_ledger(follower).at("default/f").second == std::vector<int>{std::stoi(index)});
  c.kill_replica(leader);
  REQUIRE(KubeRig::wait_until([&] { return c.leader_index() == static_cast<int>(follower); }, 15s));
  std::this_thread::sleep_for(7s);  // past the new term's grace (5 s), and a sweep
  CHECK(reservation_pods(c.api()).size() == 1);
  CHECK(c.agent().violations().empty());
  check_verify(c, follower);
}

TEST_CASE("a pod kube-scheduler failed on while no replica led is nudged by the new leader, not left to kube-scheduler's 60 s") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 8), two_replicas());
  REQUIRE(KubeRig::wait_until([&] { return c.leader_index() >= 0; }, 15s));
  const auto killed = static_cast<std::size_t>(c.leader_index());
  c.kill_replica(killed);
  // kube-scheduler tries it at once: the Lease still names the dead replica, so its Filter fails,
  // and v1.20 keeps the pod in its unschedulable queue for 60 s unless the pod changes.
  REQUIRE(c.api().create(gpu_pod("late", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return c.leader_index() >= 0 && c.leader_index() != static_cast<int>(killed); }, 15s));
  CHECK(bound(c, "default/late", 20s));
  const json late = c.api().pod("default/late");
  CHECK(late["metadata"]["annotations"].contains("fracpack.io/retry"));  // the new leader touched it
  c.restart_replica(killed);
  c.converged(30s);
}

TEST_CASE("HA soak: churn with latency, the leader killed -9 ten times at random; every failover leaves every invariant true") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(4, 8), two_replicas());
  c.proxy(0).delay(latency(3, 300));
  c.proxy(1).delay(latency(4, 300));
  std::mt19937_64 random(7);
  std::vector<std::string> alive;
  int made = 0;
  for (int kill = 0; kill < 10; ++kill) {
    const auto killed_at = std::uniform_int_distribution<int>(0, 7)(random);
    std::size_t killed = c.replica_count();
    for (int step = 0; step < 8; ++step) {
      if (step == killed_at) {
        killed = static_cast<std::size_t>(c.leader_index());
        c.kill_replica(killed);
      }
      const std::string name = fmt::format("s{:03}", made++);
      REQUIRE(c.api().create(churn_pod(name, random)) == 201);
      alive.push_back("default/" + name);
      if (step % 2 == 1 && !alive.empty()) {
        const std::size_t at = std::uniform_int_distribution<std::size_t>(0, alive.size() - 1)(random);
        (void)c.api().delete_pod(alive[at]);
        alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(at));
      }
      std::this_thread::sleep_for(200ms);
    }
    REQUIRE(KubeRig::wait_until([&] { return c.leader_index() >= 0 && c.leader_index() != static_cast<int>(killed); }, 15s));
    c.restart_replica(killed);
    c.converged(30s);
    check_invariants(c, fmt::format("failover {}", kill + 1).c_str());
    check_verify(c, static_cast<std::size_t>(c.leader_index()));
  }
}

}  // namespace
}  // namespace fracpack::test
