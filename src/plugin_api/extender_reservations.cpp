// The extender core's side of reservation pods (gpu_reservations.hpp): what the watch shows of
// them, the fractions that follow them, and the GPUs that go idle.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>

#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// Not one of ours, so never charged to a queue and never a victim (Holder::kForeign).
constexpr const char* kReservationScheduler = "fracpack/gpu-reservation";

/// spec.nodeName, or "".
std::string json_node_name(const json& pod) {
  static const json::json_pointer kNode("/spec/nodeName");
  return pod.contains(kNode) && pod[kNode].is_string() ? pod[kNode].get<std::string>() : std::string();
}

}  // namespace

int ExtenderImpl::gpu_count_of(const std::string& node) const {
  auto n = state_.cluster().find_node(node);
  return n ? static_cast<int>(state_.cluster().node(*n).gpus.size()) : -1;
}

std::optional<int> ExtenderImpl::free_gpu(std::size_t n, const std::vector<int>& taken) const {
  const ClusterState& cluster = state_.cluster();
  const auto& gpus = cluster.usage(n).gpus;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuUsage& u = gpus[g];
    const bool picked = std::find(taken.begin(), taken.end(), static_cast<int>(g)) != taken.end();
    if (u.state == GpuState::kIdle && u.holders.empty() && !u.fenced() && !picked && !book_->at(cluster.node(n).name, static_cast<int>(g))) {
      return static_cast<int>(g);
    }
  }
  return std::nullopt;
}

bool ExtenderImpl::joins_unreserved(const std::string& key, std::size_t n, const std::vector<int>& gpus) const {
  const std::string& node = state_.cluster().node(n).name;
  for (int g : gpus) {
    const auto& holders = state_.cluster().usage(n).gpus.at(static_cast<std::size_t>(g)).holders;
    const bool others = std::any_of(holders.begin(), holders.end(), [&](const std::string& h) { return h != key; });
    auto e = others ? book_->at(node, g) : std::nullopt;
    if (others && (!e || e->pod.empty())) return true;  // a new reservation pod would get some other GPU
  }
  return false;
}

Status ExtenderImpl::reserve(BindAnswer& answer, const PodRequest& pod) {
  if (!book_ || pod.fraction() == nullptr || answer.choice.gpus.empty()) return Status::ok();
  auto n = state_.cluster().find_node(answer.node);
  answer.joins_unreserved = n && joins_unreserved(answer.pod, *n, answer.choice.gpus);
  if (answer.joins_unreserved) return Status::ok();
  for (int g : answer.choice.gpus) {
    ReservationClaim claim = book_->claim(answer.node, g);
    if (claim.blocked) {
      give_up_claims(answer);
      return Status(Code::kUnschedulable,
                    fmt::format("pod {}: GPU {} of node {} has its reservation pod {} being deleted, and a GPU gets one reservation "
                                "pod at a time; kube-scheduler retries the pod once it is gone",
                                answer.pod, g, answer.node, book_->key(claim.pod)),
                    "node:" + answer.node);
    }
    if (!claim.create) answer.stale_members[claim.group] = stale_members(claim.group);
    answer.reservations.push_back(std::move(claim));
  }
  return Status::ok();
}

bool ExtenderImpl::member_runs(const std::string& uid, const std::string& key, const std::string& node) const {
  const PodRecord* r = state_.pod(key);
  return r != nullptr && r->raw.uid == uid && r->raw.bound && r->raw.bound->node == node;
}

std::vector<std::string> ExtenderImpl::stale_members(const std::string& group) const {
  constexpr std::size_t kMostPerWrite = 64;
  std::vector<std::string> out;
  const auto e = book_->find(group);
  if (!e) return out;
  for (const auto& [uid, key] : e->members) {
    const PodRecord* r = state_.pod(key);
    if ((r == nullptr || r->raw.uid != uid) && out.size() < kMostPerWrite) out.push_back(uid);  // gone, or another pod of that name
  }
  return out;
}

void ExtenderImpl::give_up_claims(BindAnswer& answer) {
  for (const ReservationClaim& claim : answer.reservations) {
    if (claim.create) book_->creation_failed(claim);  // never created: its group goes
  }
  answer.reservations.clear();
}

void ExtenderImpl::reservation_seen(const json& object) {
  const ReservationBook::Entry e = book_->seen(object, gpu_count_of(json_node_name(object)));
  if (e.gpu < 0) {
    if (!synced_) return;  // a stranger waits for every pod to be listed: it must not take a GPU a running pod holds
    auto n = state_.cluster().find_node(e.node);
    auto gpu = n ? free_gpu(*n) : std::nullopt;
    if (!gpu) return;  // its node is unknown, or has no idle GPU: the sweep tries again
    book_->learn(e.group, e.node, *gpu, /*claimed=*/false);
    check_idle(e.node, *gpu);
    return;
  }
  check_idle(e.node, e.gpu);
}

void ExtenderImpl::reservation_gone(const json& object, bool finished) {
  const std::string name = k8s::metadata_string(object, "name");
  forget_held(book_->key(name));  // its whole-GPU hold, if any
  bool held_gpu = false;
  for (const auto& group : gpu_groups(object)) {
    auto e = book_->find(group);
    auto n = e && e->gpu >= 0 ? state_.cluster().find_node(e->node) : std::nullopt;
    if (!n || e->pod != name) continue;
    held_gpu = true;
    const auto& holders = state_.cluster().usage(*n).gpus.at(static_cast<std::size_t>(e->gpu)).holders;
    if (!holders.empty()) {
      spdlog::warn("reservation pod {}/{} is gone ({}), and its GPU on node {} still has {}: that GPU is no longer held at the "
                   "kubelet",
                   book_->options().ns, name, finished ? "it finished" : "deleted", e->node, fmt::join(holders, ", "));
    }
  }
  // Its device is free at the kubelet only now: kube-scheduler refused pods on its own count of
  // nvidia.com/gpu while it stood (the ledger had let go already, and nudged them too early), and
  // waits out a growing backoff unless asked again.
  if (held_gpu) mark_pending_refused();
  book_->gone(name);
  // A reservation pod the kubelet refused or evicted (Failed) still exists: the leader deletes it.
  if (finished) book_->stray(name, k8s::metadata_string(object, "uid"));
}

void ExtenderImpl::drop_whole_hold(const std::string& group) {
  if (auto e = book_->find(group); e && !e->pod.empty()) forget_held(book_->key(e->pod));
}

void ExtenderImpl::forget_held(const std::string& key) {
  claim_edits_.erase(key);
  recorded_claims_.erase(key);
  if (state_.cluster().allocation(key) != nullptr) freed_room();  // what it held fits others again
  (void)state_.forget(key);
}

std::optional<ExtenderImpl::GroupPlan> ExtenderImpl::plan_groups(const PodRequest& raw, const json& object) const {
  if (!raw.bound || raw.fraction() == nullptr) return std::nullopt;
  const std::string& node = raw.bound->node;
  std::vector<std::string> groups = bound_gpu_groups(object);
  // The reservation pods' record of their members is believed over the pod's own words, which its
  // tenant may have edited (docs/security.md, "What fracpack believes").
  if (std::vector<std::string> recorded = raw.uid.empty() ? std::vector<std::string>{} : book_->groups_of_member(raw.uid, node);
      !recorded.empty() && recorded != groups) {
    std::vector<std::string> sorted = groups;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> recorded_sorted = recorded;
    std::sort(recorded_sorted.begin(), recorded_sorted.end());
    // A record that is part of what the pod names (a fraction on several GPUs whose last member
    // patch has not landed) leaves the pod's groups as they are.
    if (!std::includes(sorted.begin(), sorted.end(), recorded_sorted.begin(), recorded_sorted.end())) {
      if (overridden_members_.size() >= 4096) overridden_members_.clear();
      if (overridden_members_.insert(raw.uid).second) {  // said once per pod, not at every event
        spdlog::warn("pod {} on node {}: it names GPU group(s) [{}], and the reservation pods record it a member of [{}]: held by "
                     "the record (its labels and annotations are its tenant's to edit)",
                     raw.key(), node, excerpt(fmt::format("{}", fmt::join(groups, ",")), 256), fmt::join(recorded, ","));
      }
      groups = std::move(recorded);
    }
  }
  if (groups.empty()) return std::nullopt;
  for (const auto& group : groups) {
    if (auto e = book_->find(group); e && e->visible && e->node != node) {
      // A label copied from a pod elsewhere (kubectl get -o yaml, say): its group's reservation
      // pod is on another node, so this pod is no member; held as the state sees fit.
      spdlog::warn("pod {} on node {}: its GPU group {} has its reservation pod on node {}; the group is ignored for this pod",
                   raw.key(), node, group, e->node);
      return std::nullopt;
    }
  }
  auto n = state_.cluster().find_node(node);  // pods may be listed before their node
  // The GPUs the ledger holds for this very pod there: where a group nobody names an index for
  // stays (a guess made again would land elsewhere, and move a running pod).
  const PodRecord* record = state_.pod(raw.key());
  const Allocation* held = record != nullptr && record->raw.uid == raw.uid && record->raw.bound && record->raw.bound->node == node
                               ? state_.cluster().allocation(raw.key())
                               : nullptr;
  GroupPlan plan{std::move(groups), {}};
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    std::optional<int> gpu = book_->gpu_of(plan.groups[i], node);
    if (!gpu && i < raw.bound->devices.size()) gpu = raw.bound->devices[i];
    if (!gpu && held != nullptr && i < held->choice.gpus.size()) gpu = held->choice.gpus[i];
    if (!gpu && n) gpu = free_gpu(*n, plan.gpus);
    if (!gpu) {  // its node is not listed yet (or has no GPU left): learned from where the state puts it
      plan.gpus.clear();
      return plan;
    }
    plan.gpus.push_back(*gpu);
  }
  return plan;
}

void ExtenderImpl::follow_groups(const std::string& key, const std::string& node, const GroupPlan& plan) {
  if (plan.gpus.empty()) {
    unplaced_members_[key] = plan.groups;
    return;
  }
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    drop_whole_hold(plan.groups[i]);
    (void)book_->learn(plan.groups[i], node, plan.gpus[i], /*claimed=*/true);
  }
}

void ExtenderImpl::check_idle(const std::string& node, int gpu) {
  auto e = book_->at(node, gpu);
  auto n = state_.cluster().find_node(node);
  if (!e || !n || gpu >= static_cast<int>(state_.cluster().usage(*n).gpus.size())) return;
  const std::string hold = book_->key(e->pod);
  for (const std::string& holder : state_.cluster().usage(*n).gpus[static_cast<std::size_t>(gpu)].holders) {
    if (holder != hold) return;  // a fraction holds it
  }
  if (e->visible && state_.pod(hold) == nullptr) {  // deleting too: the kubelet counts it until it is gone
    PodRequest whole;  // the reservation pod holds its GPU whole until it is deleted
    whole.namespace_name = book_->options().ns;
    whole.name = e->pod;
    whole.uid = e->uid;
    whole.gpu = WholeGpus{1};
    whole.scheduler_name = kReservationScheduler;
    whole.priority = INT32_MAX;
    whole.preemptible = false;
    whole.bound = Binding{node, {gpu}};
    if (state_.observe(whole) == PodStanding::kConflict) spdlog::warn("reservation pod {}: {}", hold, state_.pod(hold)->note);
  }
  if (!e->deleting) book_->note_idle();  // whether it goes is the leader's sweep's to decide (retire_idle)
}

std::optional<std::string> ExtenderImpl::retirement(const ReservationBook::Entry& e) const {
  const auto now = std::chrono::steady_clock::now();
  const auto grace = book_->options().predecessor_grace;
  const auto term = book_->term_start();
  // Another fracpack's pods are its own business.
  if (!e.owner.empty() && !book_->ours(e)) return std::nullopt;
  // This deployment's: not in a term's first moments, while a Binding the previous leader sent
  // just before it stopped may still land on the GPU.
  if (book_->ours(e) && now - term < grace) return std::nullopt;
  if (e.claimed) return fmt::format("no fraction holds its GPU {} on node {} any more", e.gpu, e.node);
  const auto age = now - std::max(e.since, term);
  if (book_->ours(e) && !book_->mine(e) && age >= grace) {
    return fmt::format("made by {} of this deployment, and no fraction claimed it in {} s", e.creator.empty() ? "another process" : e.creator,
                       grace.count());
  }
  // This process's, never claimed: a creation whose answer was lost, then not used.
  if (book_->mine(e) && age >= 2 * book_->options().timeout) {
    return fmt::format("made by this process for a Bind that gave up, and no fraction claimed it in {} s",
                       2 * book_->options().timeout.count());
  }
  // KAI's binder may wait the whole timeout for the report, then bind the fraction: twice that,
  // and nobody will.
  if (e.owner.empty() && now - e.since >= 2 * book_->options().timeout) {
    return fmt::format("not created by fracpack, and no fraction claimed it in {} s", 2 * book_->options().timeout.count());
  }
  return std::nullopt;
}

void ExtenderImpl::retire_idle() {
  for (const ReservationBook::Entry& e : book_->entries()) {
    if (e.deleting || e.gpu < 0) continue;
    auto n = state_.cluster().find_node(e.node);
    if (!n || e.gpu >= static_cast<int>(state_.cluster().usage(*n).gpus.size())) continue;
    const std::string hold = book_->key(e.pod);
    const GpuUsage& usage = state_.cluster().usage(*n).gpus[static_cast<std::size_t>(e.gpu)];
    if (std::any_of(usage.holders.begin(), usage.holders.end(), [&](const std::string& h) { return h != hold; })) continue;  // a fraction holds it
    if (usage.fenced()) continue;  // a running pod claims it that the ledger could not hold as it says: it may be a fraction there
    if (std::any_of(e.members.begin(), e.members.end(), [&](const auto& m) { return member_runs(m.first, m.second, e.node); })) {
      continue;  // its record names a fraction that runs: whatever that pod now says, its GPU is this one
    }
    if (auto why = retirement(e)) {
      spdlog::info("reservation pod {}: {}; deleting it", hold, *why);
      book_->retire(e.group);
    }
  }
}

void ExtenderImpl::forget_pod(const std::string& key) {
  std::string node;
  std::vector<int> gpus;
  if (book_) {
    if (const Allocation* a = state_.cluster().allocation(key); a != nullptr && !a->choice.gpus.empty() &&
                                                                 std::holds_alternative<GpuFraction>(state_.pod(key)->raw.gpu)) {
      node = state_.cluster().node(a->node).name;
      gpus = a->choice.gpus;
    }
  }
  forget_held(key);
  for (int g : gpus) check_idle(node, g);
}

void ExtenderImpl::sweep_reservations() {
  if (!book_) return;
  std::unique_lock lock(mu_);
  sweep_locked();
  retire_idle();
}

void ExtenderImpl::sweep_locked() {
  for (auto it = unplaced_members_.begin(); it != unplaced_members_.end();) {
    const Allocation* a = state_.cluster().allocation(it->first);
    const PodRecord* record = state_.pod(it->first);
    if (record == nullptr || (a != nullptr && a->choice.gpus.size() < it->second.size())) {
      it = unplaced_members_.erase(it);  // gone, or held some other way
      continue;
    }
    if (a == nullptr) {
      ++it;  // still waiting for its node
      continue;
    }
    const std::string& node = state_.cluster().node(a->node).name;
    for (std::size_t i = 0; i < it->second.size(); ++i) {
      drop_whole_hold(it->second[i]);
      book_->learn(it->second[i], node, a->choice.gpus[i], /*claimed=*/true);
    }
    it = unplaced_members_.erase(it);
  }
  for (const ReservationBook::Entry& e : book_->entries()) {
    if (e.deleting) continue;
    if (e.gpu < 0) {
      if (!e.visible || !synced_) continue;
      auto n = state_.cluster().find_node(e.node);
      auto gpu = n ? free_gpu(*n) : std::nullopt;
      if (gpu) check_idle(e.node, book_->learn(e.group, e.node, *gpu, /*claimed=*/false));
      continue;
    }
    check_idle(e.node, e.gpu);
  }
}

}  // namespace fracpack::api
