// What a running pod's objects may make the ledger believe (docs/security.md, "What fracpack
// believes"): an edit of a running fraction's GPU claim frees nothing (it keeps its GPU and its
// reservation pod; the GPUs the edit names are fenced; the log and a metric say who); a claim that
// cannot be read fences what can be read of it, not the whole node; a PodGroup that cannot be
// honoured refuses its members instead of letting them bind one by one; a bind the state file
// holds from before a crash is settled by the first list after the restart.
#include <doctest/doctest.h>

#include "support/reservation_pods.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

/// GPUs of node `n` (position 0) the snapshot shows fenced.
std::vector<int> fenced(const Extender& core) {
  std::vector<int> out;
  const LedgerSnapshot snapshot = core.snapshot();
  for (const auto& g : snapshot.nodes.at(0).gpus) {
    if (g.fenced) out.push_back(g.index);
  }
  return out;
}

bool fits_whole(Extender& core, const std::string& name, int gpus) {
  auto answer = core.filter(PodBuilder(name).uid("u-" + name).whole(gpus).obj, std::vector<std::string>{"n"});
  REQUIRE(answer.is_ok());
  return !answer->passed.empty();
}

/// A following core holding default/f, a fraction of 30Gi bound behind its reservation pod
/// (reported as GPU-n-0), as the watch first showed it.
struct RunningFraction {
  std::unique_ptr<Extender> core = following();
  ReservationClaim claim = first_fraction_bound(*core, "f", 8);
  json bound = bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true);
  RunningFraction() {
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, reservation(claim, "GPU-n-0")}, {ApiEvent::Type::kModified, bound}}, nullptr);
  }
};

TEST_CASE("an edit of a running fraction's GPU claim frees nothing: it keeps its GPU and reservation, the edit's GPUs are fenced") {
  RunningFraction running;
  auto& [core, claim, bound] = running;
  const int other = (claim.gpu + 5) % 8;
  // The tenant, with patch rights on its own pod only, points it at another GPU and drops its group.
  json edited = bound;
  edited["metadata"]["annotations"]["fracpack.io/gpus"] = std::to_string(other);
  edited["metadata"]["annotations"]["nvidia.com/container.main.gpus.devices"] = "GPU-n-7";
  edited["metadata"]["annotations"].erase("fracpack.io/gpu-groups");
  edited["metadata"]["labels"].erase("runai-gpu-group");
  edited["metadata"]["managedFields"] = json::array({{{"manager", "kube-scheduler"}, {"operation", "Update"}, {"time", "2026-12-07T01:00:00Z"}},
                                                     {{"manager", "kubectl-patch"}, {"operation", "Update"}, {"time", "2026-12-07T02:00:00Z"}}});
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, edited}}, nullptr);
  CHECK(held(*core) == std::map<std::string, Held>{{"default/f", {"n", {claim.gpu}, true}}});
  CHECK(fenced(*core) == std::vector<int>{other});
  core->sweep_reservations();
  CHECK(deletions(*core->reservations()).empty());  // its GPU is still the fraction's: the reservation stays
  const LedgerGauges gauges = core->gauges();
  CHECK(gauges.pods_claim_edited == 1);
  CHECK(gauges.claim_edits_by_writer == std::map<std::string, std::uint64_t>{{"kubectl-patch", 1}});
  CHECK(core->verify().empty());
  CHECK(core->verify_against({reservation(claim, "GPU-n-0"), edited}).empty());  // the edit is known, not a drift
  // Of 8 GPUs, the fraction's and the fenced one are out: 6 whole GPUs fit, 7 do not.
  CHECK(fits_whole(*core, "w6", 6));
  CHECK_FALSE(fits_whole(*core, "w7", 7));
  // The same edit seen again is counted once; a request edit keeps the memory recorded.
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, edited}}, nullptr);
  CHECK(core->gauges().claim_edits_by_writer.at("kubectl-patch") == 1);
  json smaller = bound;
  smaller["metadata"]["annotations"]["nvidia.com/container.main.gpu-memory.request"] = "1Gi";
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, smaller}}, nullptr);
  CHECK(core->snapshot().nodes.at(0).gpus.at(static_cast<std::size_t>(claim.gpu)).used.count() == 30 * 1024);
  CHECK(fenced(*core).empty());  // this edit names no other GPU
  // Undone: read as recorded again, nothing fenced, nothing counted as edited.
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, bound}}, nullptr);
  CHECK(fenced(*core).empty());
  CHECK(core->gauges().pods_claim_edited == 0);
  CHECK(core->verify().empty());
}

TEST_CASE("an edit of only the GPU index, its group left as it was, still fences the GPU it names") {
  RunningFraction running;
  auto& [core, claim, bound] = running;
  const int other = (claim.gpu + 2) % 8;
  json edited = bound;
  edited["metadata"]["annotations"]["fracpack.io/gpus"] = std::to_string(other);  // its group still leads to its own GPU
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, edited}}, nullptr);
  CHECK(held(*core) == std::map<std::string, Held>{{"default/f", {"n", {claim.gpu}, true}}});
  CHECK(fenced(*core) == std::vector<int>{other});
  CHECK(core->gauges().pods_claim_edited == 1);
  CHECK(core->gauges().claim_edits_by_writer == std::map<std::string, std::uint64_t>{{"unknown", 1}});  // no managedFields
  CHECK(core->verify().empty());
}

/// default/f, edited by its tenant: its group dropped, its index and device pointed at `other`.
json stripped(const json& bound, int other) {
  json edited = bound;
  edited["metadata"]["annotations"]["fracpack.io/gpus"] = std::to_string(other);
  edited["metadata"]["annotations"]["nvidia.com/container.main.gpus.devices"] = "GPU-n-7";
  edited["metadata"]["annotations"].erase("fracpack.io/gpu-groups");
  edited["metadata"]["labels"].erase("runai-gpu-group");
  return edited;
}

TEST_CASE("a replica started while a tenant's edit stands holds the pod where its reservation pod records it, and keeps that pod") {
  RunningFraction running;
  auto& [core, claim, bound] = running;
  const int other = (claim.gpu + 3) % 8;
  const json edited = stripped(bound, other);
  json recorded = reservation(claim, "GPU-n-0");  // as the leader wrote it: f is its member
  recorded["metadata"]["annotations"]["members.fracpack.io/u-f"] = "default/f";
  auto started = [&](const json& reservation_pod) {
    auto fresh = following(40s, "fracpack-1/b2");  // its first view of f is the edited one
    fresh->watch_listed("Node", {nvf("n", 8, 81920).obj}, nullptr);
    fresh->watch_listed("Pod", {reservation_pod, edited}, nullptr);
    fresh->set_synced(true);
    fresh->sweep_reservations();
    return fresh;
  };
  auto fresh = started(recorded);
  CHECK(held(*fresh) == std::map<std::string, Held>{{"default/f", {"n", {claim.gpu}, true}}});
  CHECK(deletions(*fresh->reservations()).empty());  // its member runs: its GPU stays reserved
  CHECK(fresh->verify_against({recorded, edited}).empty());
  // Without the record the edit would be believed: the pod moved, the GPU it runs on unreserved.
  auto unrecorded = started(reservation(claim, "GPU-n-0"));
  CHECK(held(*unrecorded).at("default/f") == Held{"n", {other}, true});
  CHECK(deletions(*unrecorded->reservations()) == std::vector<std::string>{claim.pod});
  // A replica holding f elsewhere than the record says: /debug/verify names it.
  const auto drift = unrecorded->verify_against({recorded, edited});
  CHECK(std::any_of(drift.begin(), drift.end(), [](const std::string& d) { return d.find("record it a member") != std::string::npos; }));
}

TEST_CASE("a fraction on two GPUs whose record names one group so far keeps both: a record is a lower bound of its own words") {
  const ReservationClaim a{"n", 0, "gA", "gpu-reservation-n-aaaaa", "", true};
  const ReservationClaim b{"n", 1, "gB", "gpu-reservation-n-bbbbb", "", true};
  json ra = reservation(a, "GPU-n-0");
  ra["metadata"]["annotations"]["members.fracpack.io/u-m"] = "default/m";  // gB's member patch has not landed
  const json m = PodBuilder("m").uid("u-m").fraction("0.5").annotation("gpu-fraction-num-devices", "2").bound_to("n")
                     .label("runai-gpu-group/gA", "gA").label("runai-gpu-group/gB", "gB").obj;
  auto core = following();
  core->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
  core->watch_listed("Pod", {ra, reservation(b, "GPU-n-1"), m}, nullptr);
  core->set_synced(true);
  core->sweep_reservations();
  CHECK(held(*core).at("default/m") == Held{"n", {0, 1}, true});
  CHECK(deletions(*core->reservations()).empty());
}

TEST_CASE("a running fraction edited until it does not read keeps its GPU and its reservation pod") {
  RunningFraction running;
  auto& [core, claim, bound] = running;
  json broken = bound;
  broken["metadata"]["annotations"]["nvidia.com/container.main.gpu-memory.request"] = "lots";
  broken["metadata"]["annotations"]["fracpack.io/gpus"] = std::to_string((claim.gpu + 3) % 8);
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, broken}}, nullptr);
  CHECK(held(*core) == std::map<std::string, Held>{{"default/f", {"n", {claim.gpu}, true}}});
  CHECK(fenced(*core) == std::vector<int>{(claim.gpu + 3) % 8});  // what it now names, read where it can be
  core->sweep_reservations();
  CHECK(deletions(*core->reservations()).empty());
  CHECK(core->gauges().pods_claim_edited == 1);
  CHECK(core->verify().empty());
}

TEST_CASE("the API server's view replaces the ledger's own assumptions: a bind from the state file is no claim, never an edit") {
  StateFile file("claims-store");
  ExtenderOptions o;
  o.watching = true;
  o.state_path = file.path;
  {
    auto core = Extender::open(o);
    REQUIRE(core.is_ok());
    (*core)->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    (*core)->watch_listed("Pod", {}, nullptr);
    (*core)->set_synced(true);
    REQUIRE((*core)->filter(PodBuilder("p").uid("u-p").whole(1).obj, std::vector<std::string>{"n"}).is_ok());
    auto bound = (*core)->bind("default", "p", "u-p", "n");
    REQUIRE(bound.is_ok());
    CHECK(bound->choice.gpus == std::vector<int>{0});
  }  // killed before the Binding was sent; another replica then bound the pod on GPU 1
  auto core = Extender::open(o);
  REQUIRE(core.is_ok());
  json p = PodBuilder("p").uid("u-p").whole(1).bound_to("n").obj;
  p["metadata"]["annotations"]["fracpack.io/gpus"] = "1";
  (*core)->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
  (*core)->watch_listed("Pod", {p}, nullptr);
  (*core)->set_synced(true);
  CHECK(held(**core).at("default/p").gpus == std::vector<int>{1});
  CHECK((*core)->gauges().pods_claim_edited == 0);
  CHECK(fenced(**core).empty());
  (*core)->watch_changed("Pod", {{ApiEvent::Type::kModified, p}}, nullptr);  // seen again: the same claim
  CHECK((*core)->gauges().pods_claim_edited == 0);
}

TEST_CASE("a running pod's claim that cannot be read fences what can be read of it, the whole node only when nothing can") {
  auto core = following();
  core->watch_listed("Node", {nvf("n", 8, 81920).obj}, nullptr);
  core->set_synced(true);
  SUBCASE("a malformed fracpack.io/gpus: the indices it names") {
    json pod = PodBuilder("m").uid("u-m").whole(2).bound_to("n").annotation("fracpack.io/gpus", "2,x,5").obj;
    core->watch_listed("Pod", {pod}, nullptr);
    CHECK(fenced(*core) == std::vector<int>{2, 5});
  }
  SUBCASE("a fraction whose request does not read: the GPU its reported UUID names") {
    const ReservationClaim claim{"n", 3, "g-3", "gpu-reservation-n-three", "", true};
    json pod = bound_behind(fraction("f", "30Gi"), claim, "GPU-n-0", true);
    pod["metadata"]["annotations"]["nvidia.com/container.main.gpu-memory.request"] = "lots";
    pod["metadata"]["annotations"].erase("fracpack.io/gpus");
    core->watch_listed("Pod", {reservation(claim, "GPU-n-0"), pod}, nullptr);
    CHECK(fenced(*core) == std::vector<int>{3});
  }
  SUBCASE("nothing readable: every GPU of the node") {
    json pod = PodBuilder("m").uid("u-m").whole(2).bound_to("n").annotation("fracpack.io/gpus", "banana").obj;
    core->watch_listed("Pod", {pod}, nullptr);
    CHECK(fenced(*core).size() == 8);
  }
  SUBCASE("more GPUs than the node has: no kubelet admits it, nothing is fenced") {
    json pod = PodBuilder("big").uid("u-big").whole(9).bound_to("n").obj;
    core->watch_listed("Pod", {pod}, nullptr);
    CHECK(fenced(*core).empty());
    CHECK(fits_whole(*core, "w8", 8));
    const LedgerSnapshot snapshot = core->snapshot();
    CHECK(snapshot.bindings.at(0).note.find("cannot admit it") != std::string::npos);
  }
  CHECK(core->verify().empty());
}

TEST_CASE("a PodGroup that cannot be honoured (minMember above the limit) refuses its members; they never bind one by one") {
  auto core = following();
  core->watch_listed("Node", {nvf("n", 8, 81920).obj}, nullptr);
  core->watch_listed("Pod", {}, nullptr);
  core->set_synced(true);
  const json group = {{"apiVersion", "scheduling.run.ai/v2alpha2"},
                      {"kind", "PodGroup"},
                      {"metadata", {{"name", "huge"}, {"namespace", "default"}}},
                      {"spec", {{"minMember", 2000000}, {"queue", "default-queue"}}}};
  std::vector<std::string> notes;
  core->watch_listed("PodGroup", {group}, &notes);
  REQUIRE(notes.size() == 1);
  json member = PodBuilder("m0").uid("u-m0").whole(1).gang("huge").obj;
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member}}, nullptr);  // pending, as the watch shows it
  auto answer = core->filter(member, std::vector<std::string>{"n"});
  REQUIRE(answer.is_ok());
  CHECK(answer->passed.empty());
  REQUIRE(answer->unresolvable.size() == 1);
  CHECK(answer->unresolvable.at("n").find("PodGroup default/huge cannot be honoured") != std::string::npos);
  CHECK(answer->unresolvable.at("n").find("minMember") != std::string::npos);
  CHECK_FALSE(core->bind("default", "m0", "u-m0", "n").is_ok());
  // Fixed: the gang is planned as any other, and its refused member is asked for again at once
  // (kube-scheduler does not watch PodGroups).
  std::vector<std::string> retried;
  core->on_retry_wanted([&](const std::vector<std::string>& pods) { retried.insert(retried.end(), pods.begin(), pods.end()); });
  json fixed = group;
  fixed["spec"]["minMember"] = 1;
  core->watch_changed("PodGroup", {{ApiEvent::Type::kModified, fixed}}, nullptr);
  CHECK(std::find(retried.begin(), retried.end(), "default/m0") != retried.end());
  answer = core->filter(member, std::vector<std::string>{"n"});
  REQUIRE(answer.is_ok());
  CHECK(answer->passed == std::vector<std::string>{"n"});
  // Edited back to what cannot be honoured, through the watch as through a list: refused again.
  core->watch_changed("PodGroup", {{ApiEvent::Type::kModified, group}}, nullptr);
  answer = core->filter(member, std::vector<std::string>{"n"});
  REQUIRE(answer.is_ok());
  CHECK(answer->passed.empty());
  CHECK(answer->unresolvable.size() == 1);
}

TEST_CASE("a conflicting pod's edit is refused too: it stays held as recorded, and keeps its fence") {
  RunningFraction running;
  auto& [core, claim, bound] = running;
  // Two whole-GPU pods bound by another binder on one GPU: the second is a conflict, fencing it.
  auto whole = [](const std::string& name, const std::string& gpus) {
    return PodBuilder(name).uid("u-" + name).whole(1).bound_to("n").annotation("fracpack.io/gpus", gpus).obj;
  };
  const std::string taken = std::to_string((claim.gpu + 1) % 8);
  const std::string free_gpu = std::to_string((claim.gpu + 2) % 8);
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, whole("w1", taken)}, {ApiEvent::Type::kAdded, whole("w2", taken)}}, nullptr);
  REQUIRE(core->gauges().pods_conflicting == 1);
  // The second's tenant points it at a free GPU: still a conflict, held as recorded.
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, whole("w2", free_gpu)}}, nullptr);
  CHECK(core->gauges().pods_conflicting == 1);
  CHECK(core->gauges().pods_claim_edited == 1);
  CHECK(core->verify().empty());
}

TEST_CASE("a bind the state file holds from before a crash is settled by the first list after the restart, not held for its time") {
  StateFile file("claims");
  ExtenderOptions o;
  o.watching = true;
  o.state_path = file.path;
  o.assume_ttl = std::chrono::seconds(30);
  {
    auto core = Extender::open(o);
    REQUIRE(core.is_ok());
    (*core)->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
    (*core)->watch_listed("Pod", {}, nullptr);
    (*core)->set_synced(true);
    for (const char* name : {"sent", "unsent"}) {
      REQUIRE((*core)->filter(PodBuilder(name).uid(std::string("u-") + name).whole(1).obj, std::vector<std::string>{"n"}).is_ok());
      REQUIRE((*core)->bind("default", name, std::string("u-") + name, "n").is_ok());
    }
  }  // killed before either Binding was seen; only "sent" reached the API server
  auto core = Extender::open(o);
  REQUIRE(core.is_ok());
  CHECK((*core)->gauges().binds_assumed == 2);  // from the file, until the API server says
  json sent = PodBuilder("sent").uid("u-sent").whole(1).bound_to("n").obj;
  sent["metadata"]["annotations"]["fracpack.io/gpus"] = "0";
  (*core)->watch_listed("Node", {nvf("n", 2, 81920).obj}, nullptr);
  (*core)->watch_listed("Pod", {sent, PodBuilder("unsent").uid("u-unsent").whole(1).obj}, nullptr);
  (*core)->set_synced(true);
  const auto h = held(**core);
  CHECK(h.size() == 1);
  CHECK(h.contains("default/sent"));
  CHECK((*core)->gauges().binds_assumed == 0);
  CHECK(fits_whole(**core, "next", 1));  // "unsent"'s GPU is free at once
}

}  // namespace
}  // namespace fracpack::test
