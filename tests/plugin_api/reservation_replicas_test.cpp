// Reservation pods across replicas and restarts (docs/ha.md, "One truth for every replica"): two
// extender cores fed the same API server events in the same order, one leading. A follower reads
// each reservation pod's ledger GPU from the pod (its ledger equals the leader's), decides no
// deletion while it follows (a GPU it saw idle before the leader's next Binding keeps its
// reservation after a failover), and a restarted replica knows its predecessor's reservation pods
// at once.
#include <doctest/doctest.h>

#include "support/reservation_pods.hpp"

namespace fracpack::test {
namespace {

/// The API server's events, fed to every replica in order (each watch sees the same stream).
struct Replicas {
  std::unique_ptr<Extender> leader = following(40s, "fracpack-0/a1");
  std::unique_ptr<Extender> follower = following(40s, "fracpack-1/b1");
  bool follower_leads = false;

  Replicas() {
    follower->set_act_gate([this] {
      return follower_leads ? Status::ok() : Status(Code::kUnavailable, "fracpack replica fracpack-1 is not the leader");
    });
  }
  void listed(const std::string& kind, const std::vector<json>& objects) {
    for (Extender* core : {leader.get(), follower.get()}) {
      core->watch_listed(kind, objects, nullptr);
      core->set_synced(true);
    }
  }
  void event(ApiEvent::Type type, const json& object) {
    for (Extender* core : {leader.get(), follower.get()}) core->watch_changed("Pod", {{type, object}}, nullptr);
  }
  /// The leader's Filter and Bind of a fraction of `memory` on node n: its claims.
  std::vector<ReservationClaim> bind(const std::string& name, const std::string& memory) {
    REQUIRE(leader->filter(fraction(name, memory), std::vector<std::string>{"n"}).is_ok());
    auto bound = leader->bind("default", name, "u-" + name, "n");
    REQUIRE_MESSAGE(bound.is_ok(), bound.status().message());
    return bound->reservations;
  }
};

TEST_CASE("a follower decides no deletion: a GPU it saw idle before the leader's next Binding keeps its reservation after failover") {
  Replicas r;
  r.listed("Node", {nvf("n", 1, 81920).obj});
  r.listed("Pod", {});
  const ReservationClaim claim = r.bind("f1", "30Gi").at(0);
  REQUIRE(claim.create);
  r.event(ApiEvent::Type::kAdded, reservation(claim));
  r.event(ApiEvent::Type::kModified, reservation(claim, "GPU-n-0"));
  r.event(ApiEvent::Type::kModified, bound_behind(fraction("f1", "30Gi"), claim, "GPU-n-0", true));
  // The leader binds f2 beside f1; its Binding is slow to reach the API server, and f1 is deleted
  // meanwhile: the follower sees the GPU idle, the leader does not (f2 holds it).
  const ReservationClaim joined = r.bind("f2", "30Gi").at(0);
  CHECK_FALSE(joined.create);
  CHECK(joined.group == claim.group);
  r.event(ApiEvent::Type::kDeleted, bound_behind(fraction("f1", "30Gi"), claim, "GPU-n-0", true));
  const std::string reservation_key = "kai-resource-reservation/" + claim.pod;
  CHECK(held(*r.follower) == std::map<std::string, Held>{{reservation_key, {"n", {0}, false}}});  // held whole, idle
  CHECK(deletions(*r.follower->reservations()).empty());  // noticed, not decided: a follower decides nothing
  r.event(ApiEvent::Type::kModified, bound_behind(fraction("f2", "30Gi"), joined, "GPU-n-0", true));
  CHECK(held(*r.follower) == held(*r.leader));
  // The leader is killed; the follower takes the lead and sweeps its ledger as it is now.
  r.follower_leads = true;
  r.follower->sweep_reservations();
  CHECK(deletions(*r.follower->reservations()).empty());  // f2 runs there: its reservation stays
  CHECK(r.follower->verify().empty());
  // When f2 goes, the GPU is idle, and the new leader retires the reservation pod.
  r.event(ApiEvent::Type::kDeleted, bound_behind(fraction("f2", "30Gi"), joined, "GPU-n-0", true));
  r.follower->sweep_reservations();
  CHECK(deletions(*r.follower->reservations()) == std::vector<std::string>{claim.pod});
}

TEST_CASE("a follower reads each reservation pod's ledger GPU from the pod, not from its own idle GPUs: its ledger equals the leader's") {
  Replicas r;
  r.listed("Node", {nvf("n", 4, 81920).obj});
  r.listed("Pod", {});
  // The leader binds a whole-GPU pod (GPU 0), then a fraction, which gets GPU 1 and a new
  // reservation pod. The whole-GPU pod's Binding is slow: the reservation pod and the fraction's
  // Binding reach the API server first.
  REQUIRE(r.leader->filter(PodBuilder("w").uid("u-w").whole(1).obj, std::vector<std::string>{"n"}).is_ok());
  auto w = r.leader->bind("default", "w", "u-w", "n");
  REQUIRE(w.is_ok());
  CHECK(w->choice.gpus == std::vector<int>{0});
  const ReservationClaim claim = r.bind("f", "30Gi").at(0);
  CHECK(claim.gpu == 1);
  r.event(ApiEvent::Type::kAdded, reservation(claim));
  r.event(ApiEvent::Type::kModified, reservation(claim, "GPU-n-0"));
  CHECK(held(*r.follower).at("kai-resource-reservation/" + claim.pod).gpus == std::vector<int>{1});  // not GPU 0, its lowest idle
  r.event(ApiEvent::Type::kModified, bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true));
  json whole = PodBuilder("w").uid("u-w").whole(1).bound_to("n").obj;
  whole["metadata"]["annotations"]["fracpack.io/gpus"] = "0";
  r.event(ApiEvent::Type::kModified, whole);
  const auto follower = held(*r.follower);
  CHECK(follower == held(*r.leader));
  CHECK(follower.at("default/f").gpus == std::vector<int>{1});
  CHECK(follower.at("default/w").gpus == std::vector<int>{0});
  CHECK(r.follower->snapshot().nodes.at(0).gpus.at(0).fenced == false);
  CHECK(r.follower->verify().empty());
  // Compared with the API server's pods, both agree.
  const std::vector<json> pods{reservation(claim, "GPU-n-0"), bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true), whole};
  CHECK(r.follower->verify_against(pods).empty());
  CHECK(r.leader->verify_against(pods).empty());
}

TEST_CASE("the ledger compared with the API server's pods names each drift: GPUs, a missing pod, a fraction without its reservation") {
  auto core = following();
  const ReservationClaim claim = first_fraction_bound(*core, "f1", 4);
  const json r = reservation(claim, "GPU-n-0");
  const json f1 = bound_behind(fraction("f1", "30Gi"), claim, "GPU-n-0", true);
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, r}, {ApiEvent::Type::kModified, f1}}, nullptr);
  CHECK(core->verify_against({r, f1}).empty());
  json moved = f1;  // what a replica whose ledger drifted would be compared with
  const std::string elsewhere = std::to_string((claim.gpu + 2) % 4);
  moved["metadata"]["annotations"]["fracpack.io/gpus"] = elsewhere;
  const auto differences = core->verify_against({r, moved});
  REQUIRE(differences.size() == 1);
  CHECK(differences[0].find("pod default/f1: holds GPUs [" + std::to_string(claim.gpu) + "] of node n here; its fracpack.io/gpus says " +
                            elsewhere) != std::string::npos);
  CHECK(core->verify_against({r}).size() == 1);  // held here, not bound in the API server
  const auto unreserved = core->verify_against({f1});
  CHECK(std::any_of(unreserved.begin(), unreserved.end(), [](const std::string& d) { return d.find("has no reservation pod") != std::string::npos; }));
  json renumbered = r;
  renumbered["metadata"]["annotations"]["fracpack.io/gpu"] = std::to_string((claim.gpu + 1) % 4);
  const auto reservation_drift = core->verify_against({renumbered, f1});
  REQUIRE(reservation_drift.size() == 1);
  CHECK(reservation_drift[0].find("by its fracpack.io/gpu") != std::string::npos);
}

TEST_CASE("a reservation pod the kubelet refused, seen while following, is deleted once leading, if it still exists then") {
  Replicas r;
  r.listed("Node", {nvf("n", 2, 81920).obj});
  r.listed("Pod", {});
  auto refused = [](const std::string& name, int gpu) {
    json pod = reservation({"n", gpu, "g-" + name, name, "", true});
    pod["status"] = {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"}};
    return pod;
  };
  r.event(ApiEvent::Type::kAdded, refused("gone-meanwhile", 0));
  r.event(ApiEvent::Type::kAdded, refused("still-there", 1));
  r.event(ApiEvent::Type::kDeleted, refused("gone-meanwhile", 0));  // someone else deleted it while this replica followed
  r.follower_leads = true;
  r.follower->sweep_reservations();
  CHECK(deletions(*r.follower->reservations()) == std::vector<std::string>{"still-there"});
  CHECK(deletions(*r.follower->reservations()).empty());  // asked once; a failed deletion asks again
  r.follower->reservations()->deletion_failed({"still-there", "u-still-there"});
  CHECK(deletions(*r.follower->reservations()) == std::vector<std::string>{"still-there"});
}

TEST_CASE("decisions of one term are dropped at the next: a deletion that failed is decided again from the ledger then") {
  Replicas r;
  r.listed("Node", {nvf("n", 1, 81920).obj});
  r.listed("Pod", {});
  const ReservationClaim claim = r.bind("f1", "30Gi").at(0);
  const json res = reservation(claim, "GPU-n-0");
  r.event(ApiEvent::Type::kAdded, res);
  r.event(ApiEvent::Type::kModified, bound_behind(fraction("f1", "30Gi"), claim, "GPU-n-0", true));
  r.event(ApiEvent::Type::kDeleted, bound_behind(fraction("f1", "30Gi"), claim, "GPU-n-0", true));
  GpuReservations& book = *r.leader->reservations();
  r.leader->sweep_reservations();
  const auto taken = book.take_deletions();
  REQUIRE(taken.size() == 1);
  CHECK(book.claim("n", 0).blocked);  // its DELETE is on its way: one reservation pod per GPU at a time
  book.deletion_failed(taken.front());  // the API server refused it; then this replica lost the lead
  book.new_term();
  // The other replica led meanwhile and bound f2 there, behind the same reservation pod.
  const ReservationClaim joined{"n", 0, claim.group, claim.pod, "GPU-n-0", false};
  r.event(ApiEvent::Type::kAdded, bound_behind(fraction("f2", "30Gi"), joined, "GPU-n-0", true));
  book.new_term();  // it leads again
  r.leader->sweep_reservations();
  CHECK(deletions(book).empty());  // f2 runs there: the failed decision is not carried over
  CHECK_FALSE(book.claim("n", 0).blocked);
}

TEST_CASE("right after a term starts nothing of this deployment's retires, so a Binding the old leader sent lands on a reserved GPU") {
  ExtenderOptions o;
  o.watching = true;
  o.reservation = reservation_options();
  o.reservation.predecessor_grace = 2s;
  auto opened = Extender::open(o);
  REQUIRE(opened.is_ok());
  Extender& core = **opened;
  const ReservationClaim claim{"n", 0, "g-0", "gpu-reservation-n-zero0", "", true};
  core.watch_listed("Node", {nvf("n", 1, 81920).obj}, nullptr);
  core.watch_listed("Pod", {reservation(claim, "GPU-n-0"), bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true)}, nullptr);
  core.set_synced(true);
  core.watch_changed("Pod", {{ApiEvent::Type::kDeleted, bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true)}}, nullptr);
  core.reservations()->new_term();
  core.sweep_reservations();
  CHECK(deletions(*core.reservations()).empty());  // served, idle, but the term is young
  std::this_thread::sleep_for(2100ms);
  core.sweep_reservations();
  CHECK(deletions(*core.reservations()) == std::vector<std::string>{claim.pod});
}

TEST_CASE("two reservation pods of this deployment naming one GPU: every replica keeps the one with members, else the newer, in any order") {
  const ReservationClaim older{"n", 0, "g-old", "gpu-reservation-n-aaaaa", "", true};
  const ReservationClaim newer{"n", 0, "g-new", "gpu-reservation-n-bbbbb", "", true};
  json a = reservation(older, "GPU-n-0");
  a["metadata"]["creationTimestamp"] = "2026-12-07T01:00:00Z";
  json b = reservation(newer, "GPU-n-1");
  b["metadata"]["creationTimestamp"] = "2026-12-07T01:00:05Z";
  for (const bool newer_first : {false, true}) {
    CAPTURE(newer_first);
    auto core = following();
    core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    core->watch_listed("Pod", newer_first ? std::vector<json>{b, a} : std::vector<json>{a, b}, nullptr);
    core->set_synced(true);
    core->sweep_reservations();
    CHECK(core->reservations()->claim("n", 0).group == "g-new");
  }
  // The older one records a running member (fractions were bound behind it; the newer is a
  // stray of a split-second double leader, or forged): it keeps the GPU, and its fraction its
  // reservation, on every replica whatever the order.
  a["metadata"]["annotations"]["members.fracpack.io/u-f"] = "default/f";
  const json f = bound_behind(fraction("f", "30Gi"), older, "GPU-n-0", true);
  for (const bool newer_first : {false, true}) {
    CAPTURE(newer_first);
    auto core = following();
    core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    core->watch_listed("Pod", newer_first ? std::vector<json>{b, a, f} : std::vector<json>{a, b, f}, nullptr);
    core->set_synced(true);
    core->sweep_reservations();
    CHECK(held(*core).at("default/f") == Held{"n", {0}, true});
    const auto deleted = deletions(*core->reservations());
    CHECK(std::find(deleted.begin(), deleted.end(), older.pod) == deleted.end());
    CHECK(core->reservations()->claim("n", 0).group == "g-old");
  }
}

TEST_CASE("a restarted replica knows its predecessor's reservation pods at once: their GPUs and groups; idle ones go after the grace") {
  const ReservationClaim old{"n", 1, "g-old", "gpu-reservation-n-olddd", "", true};
  json pod = reservation(old, "GPU-n-0");
  pod["metadata"]["annotations"]["fracpack.io/created-by"] = "fracpack-0/0ld";
  auto restarted = [&](std::chrono::seconds grace) {
    ExtenderOptions o;
    o.watching = true;
    o.reservation = reservation_options();
    o.reservation.creator = "fracpack-0/new";
    o.reservation.predecessor_grace = grace;
    auto core = Extender::open(o);
    REQUIRE(core.is_ok());
    (*core)->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    (*core)->watch_listed("Pod", {pod}, nullptr);
    (*core)->set_synced(true);
    return std::move(*core);
  };
  SUBCASE("its GPU is the one the pod names, and a Bind there joins it without waiting") {
    auto core = restarted(5s);
    CHECK(held(*core) == std::map<std::string, Held>{{"kai-resource-reservation/" + old.pod, {"n", {1}, false}}});
    const ReservationClaim again = core->reservations()->claim("n", 1);
    CHECK_FALSE(again.create);
    CHECK(again.group == "g-old");
    CHECK(again.device == "GPU-n-0");
  }
  SUBCASE("unclaimed, it waits out the grace, then goes") {
    auto young = restarted(5s);
    young->sweep_reservations();
    CHECK(deletions(*young->reservations()).empty());
    auto due = restarted(0s);
    due->sweep_reservations();
    CHECK(deletions(*due->reservations()) == std::vector<std::string>{old.pod});
  }
  SUBCASE("another fracpack's reservation pod is never deleted") {
    pod["metadata"]["annotations"]["fracpack.io/reservation-owner"] = "other-ns/fracpack";
    auto core = restarted(0s);
    core->sweep_reservations();
    CHECK(deletions(*core->reservations()).empty());
    CHECK(held(*core).size() == 1);  // it holds a GPU at the kubelet all the same
  }
}

}  // namespace
}  // namespace fracpack::test
