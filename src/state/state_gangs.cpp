// SchedulingState: gangs placed whole through a scheduler that binds one pod at a time.
#include <algorithm>

#include <fmt/format.h>

#include "fracpack/core/quoting.hpp"

#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack {
std::optional<SchedulingState::GangDecision> SchedulingState::invalid_group_refusal(const PodRequest& pod) const {
  if (!pod.gang || pod.bound || groups_.contains(pod.gang_key())) return std::nullopt;
  auto invalid = invalid_groups_.find(pod.gang_key());
  if (invalid == invalid_groups_.end()) return std::nullopt;
  GangDecision d;
  d.kind = GangDecision::Kind::kRefused;
  d.unresolvable = true;  // nothing the cluster frees helps: the PodGroup must be fixed
  d.reason = fmt::format("PodGroup {} cannot be honoured ({}); its members are not scheduled until it is fixed, never one by one",
                         excerpt(invalid->first), invalid->second);
  return d;
}

bool SchedulingState::gang_needs_planning(const PodRequest& pod) const {
  if (!pod.gang) return false;
  auto g = groups_.find(pod.gang_key());
  if (g == groups_.end() || !g->second.together()) return false;
  const PodRecord* record = this->pod(pod.key());
  if (record == nullptr) return !pod.bound;
  return record->standing == PodStanding::kPending;  // not planned (held as bound), not running
}

std::vector<std::string> SchedulingState::gang_next_members(const std::string& key, GangDecision& d) const {
  const int min_member = groups_.at(key).min_member;
  const std::string shown = excerpt(key);  // in reasons: a PodGroup's name is not validated
  int running = 0;
  int planned = 0;
  std::vector<std::string> pending_keys;
  const auto listed = group_members_.find(key);
  for (const std::string& member : listed != group_members_.end() ? listed->second : std::set<std::string>{}) {
    const PodRecord& r = pods_.at(member);
    if (r.standing == PodStanding::kBound) (r.planned_until ? planned : running) += 1;
    if (r.standing == PodStanding::kPending) pending_keys.push_back(member);
  }
  const int need = min_member - running - planned;
  if (need <= 0) return {};  // the minimum is met (or planned): further members go one by one
  if (static_cast<int>(pending_keys.size()) < need) {
    d.kind = GangDecision::Kind::kWaiting;
    d.reason = fmt::format("gang {}: {} of the {} members it still needs are pending (minMember {}, {} running); its members bind "
                           "together",
                           shown, pending_keys.size(), need, min_member, running);
    return {};
  }
  std::sort(pending_keys.begin(), pending_keys.end(), [&](const std::string& a, const std::string& b) {
    const PodRecord& x = pods_.at(a);
    const PodRecord& y = pods_.at(b);
    return x.pod.created != y.pod.created ? x.pod.created < y.pod.created : a < b;
  });
  pending_keys.resize(static_cast<std::size_t>(need));
  return pending_keys;
}

std::vector<std::string> SchedulingState::gang_members_to_plan(const PodRequest& pod, const std::string& key,
                                                               GangDecision& d) const {
  std::vector<std::string> members = gang_next_members(key, d);
  if (!members.empty() && std::find(members.begin(), members.end(), pod.key()) == members.end()) {
    d.kind = GangDecision::Kind::kWaiting;
    d.reason = fmt::format("gang {}: its first {} members are placed first; this one follows them", excerpt(key), members.size());
    return {};
  }
  return members;
}

std::optional<queues::Job> SchedulingState::gang_job(const PodRequest& pod) const {
  if (!gang_needs_planning(pod)) return std::nullopt;
  const std::string key = pod.gang_key();
  const queues::PodGroupSpec& group = groups_.at(key);
  queues::Job job;
  job.name = key;
  if (group.structured()) {
    StructuredGang structured = structured_gang(key);
    job.members = std::move(structured.gang.members);
    job.min_member = structured.gang.min_member;
    job.running = std::move(structured.gang.running);
    job.rule = std::shared_ptr<const GangRule>(std::shared_ptr<const GangRule>(), &group);  // not owned: groups_ holds it
  } else {
    GangDecision ignored;
    for (const std::string& member : gang_next_members(key, ignored)) job.members.push_back(pods_.at(member).pod);
    job.min_member = static_cast<int>(job.members.size());
  }
  if (job.members.empty()) return std::nullopt;
  const PodRequest& first = job.members.front();
  job.queue = leaf_queue(first).value_or(0);
  job.priority = first.priority;
  job.preemptible = first.preemptible;
  job.created = first.created;
  const Gang gang{job.name, job.members, job.min_member, job.rule.get(), job.running};
  for (std::size_t i : gang_minimum_by_count(gang)) job.charge += pending_charge(job.members[i]);
  return job;
}

std::vector<std::string> SchedulingState::gang_planners(const PodRequest& pod) const {
  if (!gang_needs_planning(pod)) return {};
  const std::string key = pod.gang_key();
  if (!groups_.at(key).structured()) {
    GangDecision d;
    return gang_next_members(key, d);
  }
  StructuredGang gang = structured_gang(key);  // any pending member plans it, once enough are pending
  if (gang_satisfied(gang.gang) || gang_has_enough_members(gang.gang)) return gang.keys;
  return {};
}

std::optional<std::string> SchedulingState::gang_refusal(const PodRequest& pod, const Gang& gang) const {
  if (!is_ours(pod)) return std::nullopt;
  if (auto problem = queue_problem(pod)) return fmt::format("gang {}: {}", gang.name, *problem);
  auto q = leaf_queue(pod);
  if (!q) return std::nullopt;
  queues::Amounts ask;
  for (const auto& member : gang.members) ask += pending_charge(member);
  if (auto refusal = book_->admit(*q, ask, pod.preemptible)) {
    return fmt::format("gang {} ({} pods together): {}", gang.name, gang.min_member, refusal->message);
  }
  return std::nullopt;
}

void SchedulingState::hold_gang_plan(const PodRequest& pod, const std::vector<std::string>& members,
                                     const std::vector<PlaceOutcome>& outcomes,
                                     std::chrono::steady_clock::time_point until, GangDecision& d) {
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    PodRecord& r = pods_.at(members[i]);
    add_pending(r.pod, -1);
    r.raw.bound = Binding{outcomes[i].placement->node, outcomes[i].placement->choice.gpus};
    mark_started(members[i], r);
    r.standing = PodStanding::kBound;
    r.planned_until = until;
    r.charge = queues::charge_placed(r.pod, cluster_, *cluster_.allocation(members[i]));
    if (!r.ours) cluster_.set_holder(members[i], Holder::kForeign);
    charge(r, 1);
    planned_.insert(members[i]);
    if (members[i] != pod.key()) d.others.push_back(members[i]);
  }
  d.kind = GangDecision::Kind::kPlanned;
  const PodRecord& self = pods_.at(pod.key());
  if (self.raw.bound) d.node = self.raw.bound->node;
}

SchedulingState::StructuredGang SchedulingState::structured_gang(const std::string& key) const {
  StructuredGang out;
  const auto listed = group_members_.find(key);
  for (const std::string& member : listed != group_members_.end() ? listed->second : std::set<std::string>{}) {
    const PodRecord& r = pods_.at(member);
    if (r.standing == PodStanding::kBound) out.gang.running.push_back({r.pod.sub_group, cluster_.allocation(member)->node});
    if (r.standing == PodStanding::kPending) out.keys.push_back(member);
  }
  std::sort(out.keys.begin(), out.keys.end(), [&](const std::string& a, const std::string& b) {
    const PodRecord& x = pods_.at(a);
    const PodRecord& y = pods_.at(b);
    return x.pod.created != y.pod.created ? x.pod.created < y.pod.created : a < b;
  });
  const queues::PodGroupSpec& group = groups_.at(key);
  out.gang.name = excerpt(key);
  out.gang.rule = &group;
  out.gang.min_member = group.min_member;
  for (const std::string& member : out.keys) out.gang.members.push_back(pods_.at(member).pod);
  return out;
}

std::vector<std::size_t> SchedulingState::placed_members(const GangPlacer& placer) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < placer.outcomes().size(); ++i) {
    if (placer.outcomes()[i].placement) out.push_back(i);
  }
  return out;
}

std::optional<std::string> SchedulingState::structured_refusal(const PodRequest& pod, const StructuredGang& gang,
                                                               const std::vector<std::size_t>& members) const {
  Gang asked;
  asked.name = gang.gang.name;
  for (std::size_t i : members) asked.members.push_back(gang.gang.members[i]);
  asked.min_member = static_cast<int>(members.size());
  return gang_refusal(pod, asked);
}

void SchedulingState::plan_structured(const PodRequest& pod, const std::string& key, const Policy& policy,
                                      std::optional<std::chrono::steady_clock::time_point> until, GangDecision& d) {
  const StructuredGang gang = structured_gang(key);
  const auto self_at = std::find(gang.keys.begin(), gang.keys.end(), pod.key());
  if (self_at == gang.keys.end()) {
    d.kind = GangDecision::Kind::kWaiting;
    d.reason = fmt::format("gang {}: this member is not yet seen pending; its gang is planned from the pods the watch shows", gang.gang.name);
    return;
  }
  const auto self = static_cast<std::size_t>(self_at - gang.keys.begin());
  GangPlacer placer(cluster_, gang.gang, policy, /*detailed=*/0);
  if (placer.orphan(self)) {  // its label names no leaf: KAI leaves it out of the job, whatever the gang waits for
    d.kind = GangDecision::Kind::kRefused;
    d.reason = placer.outcomes()[self].why.summary;
    d.unresolvable = true;
    return;
  }
  std::string why;
  if (!placer.satisfied()) {
    if (!placer.enough_members(&why)) {
      d.kind = GangDecision::Kind::kWaiting;
      d.reason = fmt::format("gang {}{}; its members bind together", gang.gang.name, why);
      return;
    }
    if (!placer.place_minimum()) {
      d.kind = GangDecision::Kind::kRefused;
      d.reason = placer.outcomes()[self].why.summary;
      return;
    }
    if (auto refusal = structured_refusal(pod, gang, placed_members(placer))) {
      placer.undo_all({});
      d.kind = GangDecision::Kind::kRefused;
      d.reason = std::move(*refusal);
      return;
    }
  }
  if (!placer.outcomes()[self].placement) {  // beyond the minimum: this member's own step
    if (auto step = placer.place_step(self); step && !step->empty()) {
      // Admitted with the minimum just placed: the book is charged for neither yet.
      if (auto refusal = structured_refusal(pod, gang, placed_members(placer))) {
        Explanation refused;
        refused.summary = std::move(*refusal);
        placer.undo_step(*step, refused);
      }
    }
  }
  std::vector<std::string> keys;
  std::vector<PlaceOutcome> outcomes;
  for (std::size_t i : placed_members(placer)) {
    keys.push_back(gang.keys[i]);
    outcomes.push_back(placer.outcomes()[i]);
  }
  const PlaceOutcome mine = placer.outcomes()[self];
  if (until) {
    hold_gang_plan(pod, keys, outcomes, *until, d);
  } else {  // an outlook: what would be held, then nothing is
    d.kind = GangDecision::Kind::kPlanned;
    if (mine.placement) d.node = mine.placement->node;
    placer.undo_all({});
  }
  if (!mine.placement) {
    d.kind = keys.empty() ? GangDecision::Kind::kRefused : GangDecision::Kind::kWaiting;
    d.reason = mine.why.summary.empty()
                   ? fmt::format("gang {}: its members placed first are held; this one is retried after them", gang.gang.name)
                   : mine.why.summary;
  }
}

SchedulingState::GangDecision SchedulingState::plan_gang(const PodRequest& pod, const Policy& policy,
                                                         std::chrono::steady_clock::time_point now, std::chrono::seconds hold) {
  return decide_gang(pod, policy, now + hold);
}

SchedulingState::GangDecision SchedulingState::gang_outlook(const PodRequest& pod, const Policy& policy) {
  return decide_gang(pod, policy, std::nullopt);
}

SchedulingState::GangDecision SchedulingState::decide_gang(const PodRequest& pod, const Policy& policy,
                                                           std::optional<std::chrono::steady_clock::time_point> until) {
  const DebugCheck check(*this);
  GangDecision d;
  if (!pod.gang) return d;
  const std::string key = pod.gang_key();
  auto g = groups_.find(key);
  if (auto refused = invalid_group_refusal(pod)) return *refused;
  if (g == groups_.end() || !g->second.together()) return d;
  if (const PodRecord* self = this->pod(pod.key()); self != nullptr && self->planned_until) {
    d.kind = GangDecision::Kind::kPlanned;
    d.node = self->raw.bound->node;
    return d;
  }
  if (g->second.structured()) {
    plan_structured(pod, key, policy, until, d);
    return d;
  }
  const std::vector<std::string> members = gang_members_to_plan(pod, key, d);
  if (members.empty()) return d;
  Gang gang;
  gang.name = excerpt(key);
  gang.min_member = static_cast<int>(members.size());
  for (const auto& member : members) gang.members.push_back(pods_.at(member).pod);
  if (auto refusal = gang_refusal(pod, gang)) {
    d.kind = GangDecision::Kind::kRefused;
    d.reason = std::move(*refusal);
    return d;
  }
  auto outcomes = place_gang(cluster_, gang, policy, /*detailed=*/0);
  const auto failed = std::find_if(outcomes.begin(), outcomes.end(), [](const PlaceOutcome& o) { return !o.placement; });
  if (failed != outcomes.end()) {
    for (std::size_t i = 0; i < outcomes.size(); ++i) {  // all or nothing: nothing may stay held
      if (outcomes[i].placement) cluster_.release(gang.members[i].key());
    }
    d.kind = GangDecision::Kind::kRefused;
    d.reason = fmt::format("gang {} does not fit as a whole ({} pods together): {}", gang.name, gang.min_member,
                           failed->why.summary);
    return d;
  }
  if (until) {
    hold_gang_plan(pod, members, outcomes, *until, d);
    return d;
  }
  d.kind = GangDecision::Kind::kPlanned;  // an outlook: where it would go, then nothing is held
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (members[i] == pod.key()) d.node = outcomes[i].placement->node;
    cluster_.release(gang.members[i].key());
  }
  return d;
}

std::size_t SchedulingState::expire_plans(std::chrono::steady_clock::time_point now) {
  const DebugCheck check(*this);
  std::vector<std::string> lapsed;
  for (const std::string& key : planned_) {
    if (*pods_.at(key).planned_until <= now) lapsed.push_back(key);
  }
  for (const std::string& key : lapsed) {
    PodRecord& r = pods_.at(key);
    charge(r, -1);
    cluster_.release(key);
    r.raw.bound.reset();
    r.raw.started.reset();  // never ran: the next plan starts it afresh
    r.pod.started.reset();
    r.planned_until.reset();
    r.standing = PodStanding::kPending;
    add_pending(r.pod, 1);
    planned_.erase(key);
  }
  return lapsed.size();
}

std::optional<std::chrono::steady_clock::time_point> SchedulingState::next_plan_expiry() const {
  std::optional<std::chrono::steady_clock::time_point> first;
  for (const std::string& key : planned_) {
    const auto t = *pods_.at(key).planned_until;
    if (!first || t < *first) first = t;
  }
  return first;
}

}  // namespace fracpack
