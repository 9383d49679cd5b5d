// Pods refused while the ledger was behind the cluster are asked for again (recent_refusals.hpp):
// Filter remembers the pods it passed no node for; a watch batch (or a settled bind, a lapsed
// gang plan, the first full list) that frees room hands on_retry_wanted those refused shortly
// before that still wait and would now be admitted and fit somewhere. Gang members refused while
// their gang waited for members (a member's Filter can come before the watch shows the last
// member) are asked for again once the gang could be planned: the earliest-created one, whose
// Filter places the gang, or says why it does not fit as a whole.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "fracpack/binpack/scheduler.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {

void ExtenderImpl::set_synced(bool synced) {
  std::unique_lock lock(mu_);
  const bool now_synced = synced && !synced_;
  synced_ = synced;
  if (now_synced) freed_room(kQueueRetryWindow);  // every pod refused while syncing, however long it took
  retry_refused(lock);
}

void ExtenderImpl::retry_pending() {
  std::unique_lock lock(mu_);
  if (!synced_ || !options_.watching || options_.retry_refused_within.count() <= 0) return;
  mark_pending_refused();
  retry_refused(lock);
}

void ExtenderImpl::mark_pending_refused() {
  constexpr std::size_t kMostPending = 1024;  // a quarter of what RecentRefusals remembers
  if (!options_.watching || options_.retry_refused_within.count() <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  for (const std::string& key : state_.pending_keys(kMostPending)) refusals_.refused(key, now);
  freed_room(kQueueRetryWindow);
}

void ExtenderImpl::note_refusal(const PodRequest& pod, const FilterAnswer& answer) {
  if (!options_.watching || options_.retry_refused_within.count() <= 0 || !answer.passed.empty()) return;
  refusals_.refused(pod.key(), std::chrono::steady_clock::now());
}

void ExtenderImpl::freed_room(std::chrono::milliseconds within) {
  room_freed_ = std::max(room_freed_, within.count() > 0 ? within : options_.retry_refused_within);
}

void ExtenderImpl::note_gang_waiting(const PodRequest& pod) {
  if (!options_.watching || options_.retry_refused_within.count() <= 0 || !retry_wanted_) return;
  constexpr std::size_t kMostRemembered = 4096;  // as RecentRefusals: beyond it the oldest goes
  if (gang_waiting_.size() >= kMostRemembered && !gang_waiting_.contains(pod.key())) {
    gang_waiting_.erase(std::min_element(gang_waiting_.begin(), gang_waiting_.end(),
                                         [](const auto& a, const auto& b) { return a.second.at < b.second.at; }));
  }
  const PodRecord* r = state_.pod(pod.key());
  gang_waiting_[pod.key()] = {std::chrono::steady_clock::now(), r != nullptr && r->standing == PodStanding::kPending};
}

std::vector<std::string> ExtenderImpl::gang_retries() {
  std::vector<std::string> pods;
  if (gang_waiting_.empty()) return pods;
  const auto now = std::chrono::steady_clock::now();
  // Forgotten: stale ones (kube-scheduler has retried them itself), and known pods that no
  // longer wait for their gang (bound, planned, gone pending, or the minimum met). Unknown ones
  // stay: a Filter can come before the watch shows its pod.
  std::erase_if(gang_waiting_, [&](const auto& entry) {
    const PodRecord* r = state_.pod(entry.first);
    return now - entry.second.at > kQueueRetryWindow ||
           (r != nullptr && (r->standing != PodStanding::kPending || !state_.gang_needs_planning(r->pod)));
  });
  if (!synced_ || !retry_wanted_) return pods;
  std::map<std::string, std::vector<std::string>> gangs;  // gang → its waiting members: one check per gang
  for (auto& [key, wait] : gang_waiting_) {
    const PodRecord* r = state_.pod(key);
    if (r == nullptr || !r->pod.gang) continue;
    gangs[r->pod.gang_key()].push_back(key);
    // Told "not yet seen" (its Filter came before the watch showed it): asked again so the
    // reason kube-scheduler shows counts it. Without this it keeps the stale one until the gang
    // can be planned, or kube-scheduler's own retry, up to 5 minutes later.
    if (!wait.seen) pods.push_back(key);
    wait.seen = true;
  }
  for (const auto& [gang, waiting] : gangs) {
    // Any of the members to place together plans the gang at its Filter: the earliest told to wait.
    const std::vector<std::string> planners = state_.gang_planners(state_.pod(waiting.front())->pod);
    const auto asked = std::find_if(planners.begin(), planners.end(), [&](const std::string& p) { return gang_waiting_.contains(p); });
    if (asked == planners.end()) continue;
    if (std::find(pods.begin(), pods.end(), *asked) == pods.end()) pods.push_back(*asked);
    for (const std::string& key : waiting) gang_waiting_.erase(key);  // asked once; its planning touches the others
  }
  return pods;
}

std::vector<std::string> ExtenderImpl::take_retries() {
  const auto within = room_freed_;
  room_freed_ = std::chrono::milliseconds(0);
  std::vector<std::string> pods = gang_retries();
  if (within.count() <= 0 || !synced_ || !retry_wanted_ || options_.retry_refused_within.count() <= 0) return pods;
  constexpr std::size_t kMostPerBatch = 64;   // API writes per freeing change; the rest wait as before
  constexpr std::size_t kMostChecks = 256;    // distinct fit checks per change (~15 µs each)
  // Pods alike (shape, queue, preemptibility) get one verdict: a thousand refused pods of one
  // shape that fits nowhere cost one check, and do not hide the one pod behind them that fits.
  std::unordered_map<std::string, bool> passes;
  for (auto& key : refusals_.recent(std::chrono::steady_clock::now(), within)) {
    if (pods.size() >= kMostPerBatch) break;
    const PodRecord* r = state_.pod(key);
    if (r == nullptr || (r->standing != PodStanding::kPending && r->standing != PodStanding::kIgnored)) {
      refusals_.forget(key);  // bound, or gone
      continue;
    }
    // A gang member's own fit says nothing of its gang's (too few members, or not all at once):
    // gang_retries asks for the gang's planner once enough members wait, and its planning
    // touches the others.
    if (state_.gang_needs_planning(r->pod)) continue;
    auto [it, fresh] = passes.try_emplace(fmt::format("{}#{}#{}", pod_shape(r->pod), r->pod.queue, r->pod.preemptible), false);
    if (fresh) {
      if (passes.size() > kMostChecks) break;
      // Only a pod that would now pass: a retry of one that still fits nowhere is an API write
      // and a scheduling cycle for nothing (and, on every deletion, a storm of them).
      it->second = !admission(r->pod) && select(state_.cluster(), r->pod, *policy_).has_value();
    }
    if (!it->second) continue;
    refusals_.forget(key);
    pods.push_back(std::move(key));
  }
  return pods;
}

void ExtenderImpl::retry_refused(std::unique_lock<std::shared_mutex>& lock) {
  std::vector<std::string> pods = take_retries();
  lock.unlock();
  if (!pods.empty()) retry_wanted_(pods);
}

}  // namespace fracpack::api
