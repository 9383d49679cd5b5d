// Tentative evictions and placements on the scheduling state, journalled (statement.hpp).
#include "fracpack/queues/statement.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace fracpack {

Status Statement::evict(const std::string& pod_key) {
  const SchedulingState::DebugCheck check(state_);
  auto it = state_.pods_.find(pod_key);
  if (it == state_.pods_.end() || it->second.standing != PodStanding::kBound) {
    return Status(Code::kNotFound, fmt::format("pod {}: not bound, so it cannot be evicted", pod_key));
  }
  if (it->second.planned_until) {  // held for its gang's plan: it runs nowhere yet
    return Status(Code::kFailedPrecondition, fmt::format("pod {}: held for its gang's plan, not running", pod_key));
  }
  Undo undo{Undo::Kind::kEvicted, pod_key, it->second, *state_.cluster_.allocation(pod_key), true};
  state_.withdraw(pod_key, it->second, /*readopt=*/false);
  state_.pods_.erase(it);
  undo_.push_back(std::move(undo));
  return Status::ok();
}

Status Statement::place(const std::string& pod_key, std::size_t node, const GpuChoice& choice) {
  const SchedulingState::DebugCheck check(state_);
  auto it = state_.pods_.find(pod_key);
  if (it == state_.pods_.end() || it->second.standing != PodStanding::kPending) {
    return Status(Code::kNotFound, fmt::format("pod {}: not pending, so it cannot be placed", pod_key));
  }
  const PodRequest pod = it->second.pod;
  if (Status st = state_.cluster_.reserve(pod, node, choice); !st.is_ok()) return Status(Code::kUnschedulable, st.message());
  undo_.push_back({Undo::Kind::kPlaced, pod_key, it->second, std::nullopt, true});
  state_.record_bound(pod, /*session_charged=*/false);
  return Status::ok();
}

Status Statement::rebind(const std::string& pod_key, std::size_t node, const GpuChoice& choice) {
  auto was = std::find_if(undo_.rbegin(), undo_.rend(), [&](const Undo& u) { return u.kind == Undo::Kind::kEvicted && u.key == pod_key; });
  if (was == undo_.rend() || state_.pods_.count(pod_key) != 0) {
    return Status(Code::kNotFound, fmt::format("pod {}: not evicted in this statement, so it cannot be bound again", pod_key));
  }
  const auto mark = checkpoint();
  {
    const SchedulingState::DebugCheck check(state_);
    PodRecord& again = state_.pods_[pod_key];  // pending for a moment, so place() takes it: a new run
    again.raw = was->before.raw;
    again.raw.bound.reset();
    again.raw.started.reset();
    state_.place_record(pod_key, again);
    undo_.push_back({Undo::Kind::kPlaced, pod_key, PodRecord{}, std::nullopt, /*existed=*/false});  // undone: gone again
  }
  if (Status st = place(pod_key, node, choice); !st.is_ok()) {
    rollback(mark);
    return st;
  }
  return Status::ok();
}

Status Statement::move(const std::string& pod_key, std::size_t node, const GpuChoice& choice) {
  const auto mark = checkpoint();
  if (Status st = evict(pod_key); !st.is_ok()) return st;
  if (Status st = rebind(pod_key, node, choice); !st.is_ok()) {
    rollback(mark);
    return st;
  }
  return Status::ok();
}

Status Statement::place_pod(const std::string& pod_key, const Policy& policy, const NodeMask* nodes) {
  const PodRecord* record = state_.pod(pod_key);
  if (record == nullptr || record->standing != PodStanding::kPending) {
    return Status(Code::kNotFound, fmt::format("pod {}: not pending, so it cannot be placed", pod_key));
  }
  auto chosen = select(state_.cluster_, record->pod, policy, nodes);
  if (!chosen) return Status(Code::kUnschedulable, fmt::format("pod {} fits no node", pod_key));
  return place(pod_key, chosen->node, chosen->choice);
}

Status Statement::place_gang(const Gang& gang, const Policy& policy) {
  std::vector<std::pair<std::string, Placement>> placed;  // member → where the minimum puts it
  {
    GangPlacer placer(state_.cluster_, gang, policy, 0);
    if (!placer.place_minimum()) return Status(Code::kUnschedulable, fmt::format("gang {}: its minimum fits nowhere", gang.name));
    for (std::size_t i = 0; i < gang.members.size(); ++i) {
      if (const auto& p = placer.outcomes()[i].placement) placed.emplace_back(gang.members[i].key(), *p);
    }
    placer.undo_all(Explanation{});
  }
  const std::size_t mark = checkpoint();
  for (const auto& [key, p] : placed) {
    auto node = state_.cluster_.find_node(p.node);
    Status st = node ? place(key, *node, p.choice) : Status(Code::kNotFound, "node " + p.node);
    if (!st.is_ok()) {
      rollback(mark);
      return st;
    }
  }
  return Status::ok();
}

void Statement::rollback(std::size_t mark) {
  while (undo_.size() > mark) {
    const SchedulingState::DebugCheck check(state_);
    Undo undo = std::move(undo_.back());
    undo_.pop_back();
    auto it = state_.pods_.find(undo.key);
    if (undo.kind == Undo::Kind::kPlaced) {
      // Back to what it was: pending (its demand counted again), or nothing at all.
      state_.withdraw(undo.key, it->second, /*readopt=*/false);
      if (!undo.existed) {
        state_.pods_.erase(it);
        continue;
      }
      it->second = PodRecord{};
      it->second.raw = undo.before.raw;
      state_.place_record(undo.key, it->second);
      continue;
    }
    PodRecord& record = state_.pods_[undo.key] = std::move(undo.before);  // evicted: back where it was
    state_.cluster_.restore(std::move(*undo.held));
    if (record.pod.gang) state_.group_members_[record.pod.gang_key()].insert(undo.key);
    state_.charge(record, 1);
  }
}

void Statement::commit() {
  std::set<std::size_t> left;  // nodes pods left: a conflict there may fit now
  for (const Undo& undo : undo_) {
    if (undo.kind == Undo::Kind::kEvicted) left.insert(undo.held->node);
  }
  undo_.clear();
  for (std::size_t node : left) state_.readopt_conflicts(node);
}

std::vector<std::string> Statement::evicted() const {
  std::vector<std::string> out;
  for (const Undo& undo : undo_) {
    if (undo.kind == Undo::Kind::kEvicted && state_.pods_.count(undo.key) == 0) out.push_back(undo.key);  // not moved
  }
  return out;
}

}  // namespace fracpack
