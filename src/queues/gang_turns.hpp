// A gang's turns in a session (KAI's allocate action, pkg/scheduler/actions/allocate/allocate.go):
// the first turn places its minimum all-or-nothing; while members are left, the job goes back in
// line and each later turn places one more step (GangPlacer::place_step), admitted on its own.
// A step that finds no node, or that its queue refuses, ends the job's session: KAI discards it
// and does not push it back.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "fracpack/binpack/gang.hpp"
#include "fracpack/queues/session.hpp"

namespace fracpack::queues::detail {

/// Charges the members of `job` just placed to its queue, adding to result.charged.
void book_placed(const ClusterState& state, QueueBook& book, const Job& job, const std::vector<std::size_t>& members,
                 JobOutcome& result);

/// A gang between its turns. Holds its GangPlacer (what it placed so far) for the session.
class GangTurns {
 public:
  GangTurns(ClusterState& state, const Job& job, const Policy& policy, const SessionOptions& options);

  /// The first turn: the minimum, admitted on Job::charge (again on what it took when that differs).
  /// True when placed and members are left for a later turn.
  bool first(QueueBook& book, JobOutcome& result);
  /// A later turn: one step. True when placed and members are left.
  bool next(QueueBook& book, JobOutcome& result);
  /// What the next turn asks of the queue: its first member's pending charge.
  [[nodiscard]] Amounts next_ask() const;
  [[nodiscard]] GangProgress progress() const { return placer_.progress(); }

 private:
  /// Members are left and the gang goes on; else the rest are given up with the outcome kept.
  bool go_on(JobOutcome& result);
  void give_up(const std::string& because);

  ClusterState& state_;
  const Job& job_;
  const Gang gang_;  // before placer_: it holds a reference
  GangPlacer placer_;
};

}  // namespace fracpack::queues::detail
