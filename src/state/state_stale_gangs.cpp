// SchedulingState: KAI's stale gang eviction (docs/queues.md rule 15).
#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack {

void SchedulingState::observe_succeeded(const std::string& pod_key, const std::string& group_key) {
  (void)forget(pod_key);
  succeeded_[pod_key] = group_key;
}

std::vector<SchedulingState::StaleGang> SchedulingState::stale_gangs(std::chrono::seconds grace) {
  std::set<std::string> completing;  // PodGroups with a Succeeded member
  for (const auto& [_, group] : succeeded_) completing.insert(group);
  const std::int64_t t = now();
  std::vector<StaleGang> out;
  std::map<std::string, std::int64_t> still_stale;
  for (const auto& [key, group] : groups_) {
    const auto members = group_members_.find(key);
    if (!group.together() || completing.contains(key) || members == group_members_.end()) continue;
    StaleGang gang{key, group.min_member, 0, t, {}};
    Gang on_nodes;  // a structured gang: its sub-groups' minimums, counted on what is active
    on_nodes.rule = &group;
    for (const std::string& member : members->second) {
      const PodRecord& r = pods_.at(member);
      // Another scheduler's pods are its own to evict, and count for nothing here; so does a pod
      // whose sub-group label names no leaf of its PodGroup (KAI leaves it out of the job).
      if (!r.ours || r.standing == PodStanding::kPending || r.standing == PodStanding::kIgnored) continue;
      if (group.structured() && gang_running_in_tree(Gang{{}, {}, 0, &group, {{r.pod.sub_group, 0}}}) == 0) continue;
      ++gang.active;  // bound, adopted as a conflict, waiting for its node, or planned
      on_nodes.running.push_back({r.pod.sub_group, 0});
      if (r.raw.bound && !r.planned_until) gang.evict.push_back(member);  // a planned one holds nothing in the cluster
    }
    const bool whole = group.structured() ? gang_satisfied(on_nodes) : gang.active >= gang.min_member;
    if (gang.active == 0 || whole) continue;
    const auto since = stale_since_.find(key);
    gang.stale_since = since != stale_since_.end() ? since->second : t;
    still_stale[key] = gang.stale_since;
    // The clock counts whole seconds and the gang went stale somewhere in its first one: a grace
    // above 0 waits one more, so that no gang is evicted before its grace is over.
    const std::int64_t wait = grace.count() + (grace.count() > 0 ? 1 : 0);
    if (grace.count() >= 0 && t - gang.stale_since >= wait && !gang.evict.empty()) out.push_back(std::move(gang));
  }
  stale_since_ = std::move(still_stale);  // a gang whole again, or gone, starts over
  return out;
}

}  // namespace fracpack
