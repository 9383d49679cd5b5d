// Reservation pods (gpu_reservations.hpp): the book's claims and waits, KAI's pod format, and the
// extender core following them through the watch: fractions share their GPU's group, an idle GPU's
// reservation holds it whole until deleted, a restart (pods listed before their node) keeps the
// groups, a reservation nobody claims is retired, a KAI-bound fraction follows its group's GPU.
#include <thread>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "plugin_api/reservation_book.hpp"
#include "support/builders.hpp"
#include "support/reservation_pods.hpp"

namespace fracpack::test {
namespace {

using api::ReservationBook;
using namespace std::chrono_literals;

TEST_CASE("the book: one reservation per GPU, claims wait for its report, a failed creation's pod is deleted") {
  ReservationBook book(reservation_options(1s));
  const ReservationClaim a = book.claim("n", 0);
  CHECK(a.create);
  CHECK(a.pod.starts_with("gpu-reservation-n-"));
  CHECK(a.group.size() == 36);  // a UUID, as KAI's groups are
  const ReservationClaim b = book.claim("n", 0);
  CHECK_FALSE(b.create);  // a second fraction of the same GPU: the same reservation
  CHECK(b.group == a.group);
  const ReservationClaim c = book.claim("n", 1);
  CHECK(c.create);
  CHECK(c.group != a.group);
  // The waiter wakes when the watch shows the report.
  std::thread watch([&] {
    std::this_thread::sleep_for(50ms);
    book.seen(reservation(a, "GPU-abc"));
  });
  auto device = book.await_device(a.group, std::chrono::steady_clock::now() + 5s);
  watch.join();
  REQUIRE(device.is_ok());
  CHECK(*device == "GPU-abc");
  CHECK(book.claim("n", 0).device == "GPU-abc");  // later claims need not wait
  // No report in time: the error names the pod and the annotation it waits for.
  auto late = book.await_device(c.group, std::chrono::steady_clock::now() + 10ms);
  REQUIRE_FALSE(late.is_ok());
  CHECK(late.status().message().find(c.pod) != std::string::npos);
  CHECK(late.status().message().find("run.ai/reserve_for_gpu_index") != std::string::npos);
  // Its pod could not be created: the group goes, its waiters give up, the GPU starts afresh.
  book.creation_failed(c);
  CHECK_FALSE(book.find(c.group).has_value());
  CHECK_FALSE(book.await_device(c.group, std::chrono::steady_clock::now() + 1s).is_ok());
  CHECK(book.claim("n", 1).create);
  // Retired before the watch showed it: deleted all the same (a 404 says it is gone); a failed
  // deletion is asked again.
  const ReservationClaim d = book.claim("n", 2);
  book.retire(d.group);
  CHECK(book.sweep_due());
  CHECK(deletions(book) == std::vector<std::string>{d.pod});
  CHECK_FALSE(book.sweep_due());
  book.deletion_failed({d.pod, ""});
  CHECK(deletions(book) == std::vector<std::string>{d.pod});
  book.deleted(d.pod);
  CHECK_FALSE(book.find(d.group).has_value());
  CHECK(book.claim("n", 2).create);  // the GPU gets a new reservation, not the one on its way out
}

TEST_CASE("the book: a reservation pod someone deletes takes no new fraction; a DELETE refused 409 blocks nothing") {
  ReservationBook book(reservation_options(1s));
  const ReservationClaim a = book.claim("n", 0);
  json going = reservation(a, "GPU-a");
  book.seen(going);
  CHECK_FALSE(book.claim("n", 0).blocked);
  going["metadata"]["deletionTimestamp"] = "2026-12-07T12:00:00Z";  // an eviction, an administrator
  book.seen(going);
  CHECK(book.claim("n", 0).blocked);  // terminating: its GPU leaves the kubelet's count when it ends
  // The leader's DELETE was refused 409: the pod of that name is another by now; nothing is going.
  const ReservationClaim b = book.claim("n", 1);
  book.seen(reservation(b, "GPU-b"));
  book.retire(b.group);
  const auto taken = book.take_deletions();
  REQUIRE(taken.size() == 1);
  CHECK(book.claim("n", 1).blocked);
  book.deletion_refused(taken.front());
  CHECK_FALSE(book.claim("n", 1).blocked);
  CHECK(book.take_deletions().empty());
}

TEST_CASE("the book: a second reservation pod of a group, a report that is no GPU, a relabelled pod") {
  ReservationBook book(reservation_options());
  const ReservationClaim a = book.claim("n", 0);
  book.seen(reservation(a, "GPU-a"));
  // A second pod with a's group: a keeps its own, the second is deleted.
  ReservationClaim dup = a;
  dup.pod = "gpu-reservation-n-dupli";
  CHECK(book.seen(reservation(dup, "GPU-dup")).pod == a.pod);
  CHECK(deletions(book) == std::vector<std::string>{dup.pod});
  CHECK(book.find(a.group)->device == "GPU-a");
  // Another GPU's reservation reporting a's GPU, or a list: not used, the Bind keeps waiting.
  const ReservationClaim b = book.claim("n", 1);
  CHECK(book.seen(reservation(b, "GPU-a")).device.empty());
  CHECK(book.seen(reservation(b, "GPU-x,GPU-y")).device.empty());
  CHECK(book.seen(reservation(b, "GPU-b")).device == "GPU-b");
  // b's pod relabelled to another group: b's group no longer has it; its deletion clears both.
  ReservationClaim relabelled = b;
  relabelled.group = "junk";
  book.seen(reservation(relabelled, "GPU-b"));
  CHECK(book.find(b.group)->pod.empty());
  book.gone(b.pod);
  CHECK_FALSE(book.find("junk").has_value());
}

TEST_CASE("the book: a second reservation pod that becomes its group's only one is not deleted") {
  ReservationBook book(reservation_options());
  const ReservationClaim a = book.claim("n", 0);
  book.seen(reservation(a, "GPU-a"));
  ReservationClaim dup = a;
  dup.pod = "gpu-reservation-n-dupli";
  book.seen(reservation(dup, "GPU-a"));  // a second pod of the group: a stray
  book.gone(a.pod);                      // the first goes; the second is all the group has
  book.seen(reservation(dup, "GPU-a"));
  CHECK(deletions(book).empty());
  CHECK(book.find(a.group)->pod == dup.pod);
}

TEST_CASE("the book: a group seen on another node leaves its old GPU, and nothing dangles") {
  ReservationBook book(reservation_options());
  const ReservationClaim a = book.claim("n1", 0);
  CHECK(book.learn(a.group, "n2", 3, true) == 3);  // a pod of the group on n2 (say, recreated from a copy)
  CHECK_FALSE(book.at("n1", 0).has_value());
  CHECK(book.at("n2", 3)->group == a.group);
  book.seen(reservation(ReservationClaim{"n1", 0, a.group, a.pod, "", true}, "GPU-a"));  // its pod is on n1 after all
  CHECK_FALSE(book.at("n2", 3).has_value());
  book.gone(a.pod);
  CHECK_FALSE(book.at("n1", 0).has_value());
  CHECK(book.claim("n1", 0).create);
  CHECK(book.claim("n2", 3).create);
  // A group whose reservation pod is visible does not move for a pod elsewhere with its label.
  const ReservationClaim c = book.claim("n1", 1);
  book.seen(reservation(c, "GPU-c"));
  CHECK(book.learn(c.group, "n2", 0, true) == 0);
  CHECK(book.at("n1", 1)->group == c.group);
  CHECK_FALSE(book.at("n2", 0).has_value());
}

TEST_CASE("the reservation pod is KAI's: namespace, labels, node, one nvidia.com/gpu, the program's env") {
  const ReservationClaim claim{"gpu-7", 3, "g-1", "gpu-reservation-gpu-7-abcde", "", true};
  const json pod = api::reservation_pod(reservation_options(), claim);
  CHECK(pod["metadata"]["namespace"] == "kai-resource-reservation");
  CHECK(pod["metadata"]["labels"] == json{{"app", "kai-resource-reservation"}, {"runai-gpu-group", "g-1"}});
  CHECK(pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true");
  CHECK(pod["spec"]["nodeName"] == "gpu-7");
  CHECK(pod["spec"]["serviceAccountName"] == "kai-resource-reservation");
  const json& ctr = pod["spec"]["containers"][0];
  CHECK(ctr["name"] == "resource-reservation");
  CHECK(ctr["resources"]["limits"]["nvidia.com/gpu"] == "1");
  CHECK(ctr["resources"]["requests"]["nvidia.com/gpu"] == "1");
  CHECK(ctr["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name");
  CHECK(api::gpu_groups(pod) == std::vector<std::string>{"g-1"});
  CHECK_FALSE(pod["spec"].contains("runtimeClassName"));
  GpuReservationOptions nvidia = reservation_options();
  nvidia.runtime_class = "nvidia";
  CHECK(api::reservation_pod(nvidia, claim)["spec"]["runtimeClassName"] == "nvidia");
}

TEST_CASE("fractions share their GPU's reservation; an idle GPU's reservation pod holds it whole until it is deleted") {
  auto core = following();
  GpuReservations& book = *core->reservations();
  const ReservationClaim claim = first_fraction_bound(*core, "f1");
  REQUIRE(claim.create);
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, reservation(claim)}}, nullptr);
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, reservation(claim, "GPU-1")}}, nullptr);
  CHECK(book.await_device(claim.group, std::chrono::steady_clock::now()).value() == "GPU-1");
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, bound_behind(fraction("f1", "30Gi"), claim, "GPU-1")}}, nullptr);
  // /snapshot names each GPU's reservation pod and the GPU it reported.
  const LedgerSnapshot snapshot = core->snapshot();  // named: a reference into a temporary dangles
  const auto& gpus = snapshot.nodes.at(0).gpus;
  CHECK(gpus.at(static_cast<std::size_t>(claim.gpu)).reservation == "kai-resource-reservation/" + claim.pod);
  CHECK(gpus.at(static_cast<std::size_t>(claim.gpu)).device == "GPU-1");
  CHECK(gpus.at(static_cast<std::size_t>(1 - claim.gpu)).reservation.empty());
  // The reservation pod is not a pod of the ledger while a fraction holds its GPU.
  CHECK(held(*core) == std::map<std::string, Held>{{"default/f1", {"n", {claim.gpu}, true}}});
  CHECK(core->verify().empty());
  core->sweep_reservations();
  CHECK(deletions(book).empty());
  // f1 goes: its GPU is idle; the reservation pod holds it whole (no queue's) until it is deleted.
  core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, bound_behind(fraction("f1", "30Gi"), claim, "GPU-1")}}, nullptr);
  const std::string reservation_key = "kai-resource-reservation/" + claim.pod;
  CHECK(held(*core) == std::map<std::string, Held>{{reservation_key, {"n", {claim.gpu}, false}}});
  CHECK(book.sweep_due());
  core->sweep_reservations();  // the leader's sweep decides
  CHECK(deletions(book) == std::vector<std::string>{claim.pod});
  CHECK(core->verify().empty());
  core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, reservation(claim, "GPU-1")}}, nullptr);
  CHECK(held(*core).empty());
  CHECK(book.claim("n", claim.gpu).create);  // a new fraction there gets a new reservation
  CHECK(core->verify().empty());
}

TEST_CASE("after a restart the groups are kept, though the pods are listed before their node") {
  auto core = following();
  GpuReservations& book = *core->reservations();
  const ReservationClaim claim{"n", 1, "g-1", "gpu-reservation-n-aaaaa", "", true};
  // Two fractions on the ledger's GPU 1 behind one reservation pod; the Pod list comes first.
  core->watch_listed("Pod", {reservation(claim, "GPU-x"), bound_behind(fraction("f1", "30Gi"), claim, "GPU-x"),
                             bound_behind(fraction("f2", "30Gi"), claim, "GPU-x")},
                     nullptr);
  core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
  core->set_synced(true);
  const auto h = held(*core);
  CHECK(h.at("default/f1").gpus == std::vector<int>{1});
  CHECK(h.at("default/f2").gpus == std::vector<int>{1});
  CHECK(h.size() == 2);
  const ReservationClaim again = book.claim("n", 1);
  CHECK_FALSE(again.create);  // the same reservation pod, its GPU already reported
  CHECK(again.group == "g-1");
  CHECK(again.device == "GPU-x");
  CHECK(core->verify().empty());
}

TEST_CASE("a reservation pod nobody claims holds a GPU whole and is retired after the timeout; a KAI-bound fraction follows its group") {
  SUBCASE("unclaimed: retired") {
    auto core = following(0s);
    core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    const ReservationClaim orphan{"n", -1, "g-o", "gpu-reservation-n-orphn", "", false};
    core->watch_listed("Pod", {kai_reservation(orphan, "GPU-o")}, nullptr);
    CHECK(held(*core).empty());  // before every kind is listed, a stranger takes no GPU a running pod may hold
    core->set_synced(true);
    core->sweep_reservations();  // the watch's timer
    CHECK(held(*core) == std::map<std::string, Held>{{"kai-resource-reservation/gpu-reservation-n-orphn", {"n", {0}, false}}});
    CHECK(deletions(*core->reservations()) == std::vector<std::string>{orphan.pod});
    CHECK(core->verify().empty());
  }
  SUBCASE("claimed by a fraction KAI bound: the fraction takes the reservation's GPU") {
    auto core = following();
    core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    core->watch_listed("Pod", {bound_whole("w", "n")}, nullptr);  // GPU 0 is a whole-GPU pod's
    core->set_synced(true);
    const ReservationClaim kai{"n", -1, "g-k", "gpu-reservation-n-kaiaa", "", false};
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, kai_reservation(kai, "GPU-k")}}, nullptr);
    const std::string reservation_key = "kai-resource-reservation/" + kai.pod;
    CHECK(held(*core).at(reservation_key).gpus == std::vector<int>{1});
    core->sweep_reservations();
    CHECK(deletions(*core->reservations()).empty());  // not ours, young: its binder may be about to use it
    json f = fraction("f", "20Gi");  // KAI labels it and names the device in its own way (a ConfigMap)
    f["spec"]["nodeName"] = "n";
    f["metadata"]["labels"]["runai-gpu-group"] = "g-k";
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, f}}, nullptr);
    const auto h = held(*core);
    CHECK(h.at("default/f").gpus == std::vector<int>{1});
    CHECK_FALSE(h.contains(reservation_key));
    CHECK(core->verify().empty());
  }
}

TEST_CASE("a fraction that joins a GPU whose fractions run without a reservation pod is bound as they are") {
  auto core = following();
  core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
  json legacy = fraction("legacy", "40Gi");  // bound before reservations were on: the ledger's index only
  legacy["spec"]["nodeName"] = "n";
  legacy["metadata"]["annotations"]["nvidia.com/container.main.gpus.devices"] = "0";
  core->watch_listed("Pod", {legacy}, nullptr);
  core->set_synced(true);
  REQUIRE(core->filter(fraction("next", "20Gi"), std::vector<std::string>{"n"}).is_ok());
  auto next = core->bind("default", "next", "u-next", "n");
  REQUIRE(next.is_ok());
  CHECK(next->choice.gpus == std::vector<int>{0});  // pack: beside the legacy pod
  CHECK(next->joins_unreserved);
  CHECK(next->reservations.empty());
  REQUIRE(core->filter(fraction("big", "65Gi"), std::vector<std::string>{"n"}).is_ok());
  auto big = core->bind("default", "big", "u-big", "n");
  REQUIRE(big.is_ok());
  CHECK(big->choice.gpus == std::vector<int>{1});  // an idle GPU: it gets a reservation pod
  CHECK_FALSE(big->joins_unreserved);
  REQUIRE(big->reservations.size() == 1);
  CHECK(big->reservations[0].create);
  // A second fraction Bound onto big's GPU before big's reservation pod exists shares its claim
  // (claims are made with the ledger's bind, under its lock): no race to two reservation pods.
  REQUIRE(core->filter(fraction("beside", "10Gi"), std::vector<std::string>{"n"}).is_ok());
  auto beside = core->bind("default", "beside", "u-beside", "n");
  REQUIRE(beside.is_ok());
  CHECK(beside->choice.gpus == std::vector<int>{1});  // pack: the fuller GPU that fits
  CHECK_FALSE(beside->joins_unreserved);
  REQUIRE(beside->reservations.size() == 1);
  CHECK_FALSE(beside->reservations[0].create);
  CHECK(beside->reservations[0].group == big->reservations[0].group);
}

TEST_CASE("a KAI fraction whose group loses its reservation pod stays on its GPU: no guess moves it, no edit is read") {
  auto core = following();
  core->watch_listed("Node", {nvf("n", 4, 81920).obj}, nullptr);
  core->watch_listed("Pod", {bound_whole("w", "n")}, nullptr);  // GPU 0 is a whole-GPU pod's
  core->set_synced(true);
  const ReservationClaim kai{"n", -1, "g-k", "gpu-reservation-n-kaiaa", "", false};
  json f = fraction("f", "20Gi");
  f["spec"]["nodeName"] = "n";
  f["metadata"]["labels"]["runai-gpu-group"] = "g-k";
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, kai_reservation(kai, "GPU-k")}, {ApiEvent::Type::kAdded, f}}, nullptr);
  const std::vector<int> where = held(*core).at("default/f").gpus;
  json failed = kai_reservation(kai, "GPU-k");
  failed["status"] = {{"phase", "Failed"}};
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, failed}, {ApiEvent::Type::kModified, f}}, nullptr);
  CHECK(held(*core).at("default/f").gpus == where);
  CHECK(core->gauges().pods_claim_edited == 0);
  CHECK(core->verify().empty());
}

TEST_CASE("a reservation pod the kubelet refused is deleted; a KAI fraction listed before its node learns its group's GPU") {
  SUBCASE("refused (Failed): deleted, and its GPU is the fraction's alone") {
    auto core = following();
    const ReservationClaim claim = first_fraction_bound(*core, "f1");
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, reservation(claim, "GPU-1")}}, nullptr);
    core->watch_changed("Pod", {{ApiEvent::Type::kModified, bound_behind(fraction("f1", "30Gi"), claim, "GPU-1")}}, nullptr);
    json failed = reservation(claim, "GPU-1");
    failed["status"] = {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"}};
    core->watch_changed("Pod", {{ApiEvent::Type::kModified, failed}}, nullptr);
    CHECK(deletions(*core->reservations()) == std::vector<std::string>{claim.pod});
    CHECK(held(*core) == std::map<std::string, Held>{{"default/f1", {"n", {claim.gpu}, true}}});
    CHECK(core->verify().empty());
  }
  SUBCASE("listed before its node, naming no GPU: the group is learned from where the ledger holds it") {
    auto core = following();
    const ReservationClaim kai{"n", -1, "g-k", "gpu-reservation-n-kaiaa", "", false};
    json f = fraction("f", "20Gi");
    f["spec"]["nodeName"] = "n";
    f["metadata"]["labels"]["runai-gpu-group"] = "g-k";
    core->watch_listed("Pod", {kai_reservation(kai, "GPU-k"), f}, nullptr);
    core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    core->set_synced(true);
    core->sweep_reservations();  // the watch's timer
    const auto h = held(*core);
    REQUIRE(h.contains("default/f"));
    CHECK(h.size() == 1);  // the reservation pod is not counted beside its fraction
    const ReservationClaim again = core->reservations()->claim("n", h.at("default/f").gpus.at(0));
    CHECK(again.group == "g-k");
    CHECK_FALSE(again.create);
    CHECK(core->verify().empty());
  }
}

}  // namespace
}  // namespace fracpack::test
