#include "gang_turns.hpp"

#include <fmt/format.h>

namespace fracpack::queues::detail {
namespace {

/// What the members of `job` just placed are charged.
Amounts charged_for(const ClusterState& state, const Job& job, const std::vector<std::size_t>& members) {
  Amounts sum;
  for (std::size_t i : members) sum += charge_placed(job.members[i], state, *state.allocation(job.members[i].key()));
  return sum;
}

Explanation refused_by_queue(const Refusal& refusal) {
  Explanation why;
  why.summary = refusal.message;
  return why;
}

}  // namespace

void book_placed(const ClusterState& state, QueueBook& book, const Job& job, const std::vector<std::size_t>& members,
                 JobOutcome& result) {
  for (std::size_t i : members) {
    const Amounts placed = charge_placed(job.members[i], state, *state.allocation(job.members[i].key()));
    book.charge(job.queue, placed, job.members[i].preemptible);
    result.charged += placed;
  }
}

GangTurns::GangTurns(ClusterState& state, const Job& job, const Policy& policy, const SessionOptions& options)
    : state_(state),
      job_(job),
      gang_{job.name, job.members, job.min_member, job.rule.get(), job.running},
      placer_(state, gang_, policy, options.detailed, options.explain_cache) {}

bool GangTurns::first(QueueBook& book, JobOutcome& result) {
  if (result.refused.size() < job_.members.size()) result.refused.assign(job_.members.size(), std::nullopt);
  const std::vector<std::size_t> counted = placer_.minimum_by_count();
  if (!placer_.place_minimum()) {
    result.members = placer_.outcomes();
    return false;
  }
  std::vector<std::size_t> minimum;
  for (std::size_t i = 0; i < job_.members.size(); ++i) {
    if (placer_.outcomes()[i].placement) minimum.push_back(i);
  }
  if (minimum != counted) {  // the minimum took other sub-groups than counted: admitted on what it placed
    if (auto refusal = book.admit(job_.queue, charged_for(state_, job_, minimum), job_.preemptible)) {
      placer_.undo_all(refused_by_queue(*refusal));
      result.refusal = std::move(refusal);
      result.members = placer_.outcomes();
      return false;
    }
  }
  book_placed(state_, book, job_, minimum, result);
  return go_on(result);
}

bool GangTurns::next(QueueBook& book, JobOutcome& result) {
  const std::optional<std::size_t> first = placer_.next_member();
  auto step = placer_.place_step();
  if (!step) return false;
  if (step->empty()) {
    give_up(fmt::format("member {} found no node", job_.members[*first].key()));
    result.members = placer_.outcomes();
    return false;
  }
  if (auto refusal = book.admit(job_.queue, charged_for(state_, job_, *step), job_.preemptible)) {
    placer_.undo_step(*step, refused_by_queue(*refusal));
    for (std::size_t i : *step) result.refused[i] = refusal;
    give_up(fmt::format("its queue refused member {}", job_.members[*first].key()));
    result.members = placer_.outcomes();
    return false;
  }
  book_placed(state_, book, job_, *step, result);
  return go_on(result);
}

Amounts GangTurns::next_ask() const {
  const std::optional<std::size_t> next = placer_.next_member();
  if (!next) return Amounts{};
  return *next < job_.member_charges.size() ? job_.member_charges[*next] : charge_pending(job_.members[*next], state_);
}

bool GangTurns::go_on(JobOutcome& result) {
  result.members = placer_.outcomes();
  return placer_.next_member().has_value();
}

void GangTurns::give_up(const std::string& because) {
  Explanation why;
  why.code = Code::kUnschedulable;
  why.summary = fmt::format("gang {}: {}, so its further members wait for the next session (KAI's allocate action)",
                            job_.name, because);
  placer_.stop(why);
}

}  // namespace fracpack::queues::detail
