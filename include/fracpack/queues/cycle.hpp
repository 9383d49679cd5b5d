// KAI's scheduling cycle as code, once: an ordered list of actions, each a small named object
// with one entry point, run over the jobs still waiting (KAI pkg/scheduler/actions; the order is
// KAI's `actions` setting, by default "allocate, consolidation, reclaim, preempt,
// stalegangeviction"). `fracpack place` runs it; each action's rules are docs/queues.md's:
//
//   allocate            every waiting job in queue order, admitted and placed (rule 10;
//                       queues/session.hpp).
//   consolidation       a preemptible job that fits nowhere, placed by moving running pods
//                       (rule 14; SchedulingState::plan_consolidation).
//   reclaim             a job whose queue is under its share, placed on what other queues' pods
//                       give back (rule 12; SchedulingState::find_victims, VictimPass::kReclaim).
//   preempt             a job placed on what lower-priority pods of its own queue give back
//                       (rule 12; VictimPass::kPreempt).
//   stalegangeviction   gangs running below their minimum past their grace, evicted whole
//                       (rule 15; SchedulingState::stale_gangs).
//
// Consolidation, reclaim and preempt take the jobs allocate left waiting, in the order allocate
// visited them (queue order), and act through one Statement per job: its victims evicted and its
// pods placed (KAI: pipelined) together, or nothing. What one job's action changes, the next job
// sees (a second reclaimer finds the first one's victims gone).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/binpack/policy.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/queues/consolidation.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/queues/session.hpp"

namespace fracpack::cycle {

/// KAI's actions, by KAI's names (pkg/scheduler/actions/factory.go).
enum class ActionKind : std::uint8_t { kAllocate, kConsolidation, kReclaim, kPreempt, kStaleGangEviction };

/// "allocate", "consolidation", "reclaim", "preempt", "stalegangeviction".
std::string_view action_name(ActionKind kind);
/// KAI's default cycle: allocate, consolidation, reclaim, preempt, stalegangeviction.
const std::vector<ActionKind>& default_actions();
/// KAI's `actions` setting, names separated by commas (spaces allowed): "allocate, reclaim".
/// kInvalidArgument naming the entry, for an unknown name, a repeated one or an empty list.
Result<std::vector<ActionKind>> parse_actions(std::string_view text);

/// What one action did for one job (consolidation, reclaim, preempt) or one gang (stale gang
/// eviction). Its pods are placed (KAI: pipelined onto what the victims and moved pods free).
struct Decision {
  ActionKind action = ActionKind::kAllocate;
  const queues::Job* job = nullptr;          ///< null for stale gang eviction
  /// When `job` is a further member of a gang whose minimum allocate placed (CycleResult::further):
  /// that gang's job.
  const queues::Job* part_of = nullptr;
  std::vector<Placement> placed;             ///< the job's pods, where they now are
  std::vector<std::string> victims;          ///< pod keys evicted for it (reclaim, preempt, stale gang members)
  std::vector<queues::Move> moves;           ///< running pods moved for it (consolidation)
  std::string gang;                          ///< stale gang eviction: the PodGroup, "namespace/name"
};

struct CycleOptions {
  std::vector<ActionKind> actions = default_actions();
  queues::SessionOptions session{};              ///< allocate's
  queues::ConsolidationLimits consolidation{};   ///< consolidation's bounds
  std::chrono::seconds staleness_grace{60};      ///< stale gang eviction's (KAI's default 60 s)
  /// Out, when not null: the earliest moment a candidate min-runtime protection left out stops
  /// being shielded (queues::VictimShield::lapse).
  std::optional<std::int64_t>* shield_lapse = nullptr;
};

struct CycleResult {
  std::vector<queues::JobOutcome> allocated;  ///< allocate's outcomes, in the order it visited the jobs
  std::vector<Decision> decisions;            ///< every other action's, in the order they were taken
  /// Jobs still waiting after the cycle, in allocate's order (then the rest in input order).
  std::vector<const queues::Job*> waiting;
  /// For each gang allocate placed the minimum of but not every member: its next member as a job
  /// of its own, which the later actions take in the gang's place (KAI's reclaim and preempt take
  /// a job's next batch: podgroup_info.GetTasksToAllocate), with the gang it belongs to.
  std::vector<std::pair<std::unique_ptr<queues::Job>, const queues::Job*>> further;
};

/// One cycle's working set, shared by its actions.
struct CycleContext {
  SchedulingState& state;
  const Policy& policy;
  const CycleOptions& options;
  std::vector<const queues::Job*> waiting;  ///< jobs no action has placed yet, in the order actions take them
  CycleResult result;
  /// The gang `job` is a further member of (CycleResult::further), or null.
  [[nodiscard]] const queues::Job* part_of(const queues::Job* job) const {
    for (const auto& [member, gang] : result.further) {
      if (member.get() == job) return gang;
    }
    return nullptr;
  }
};

/// One of KAI's actions: a name and one entry point.
class Action {
 public:
  virtual ~Action() = default;
  [[nodiscard]] virtual ActionKind kind() const = 0;
  /// Acts on `cycle.waiting` (and removes the jobs it placed), recording what it did.
  virtual void execute(CycleContext& cycle) const = 0;
};

/// The action object for `kind`.
std::unique_ptr<Action> make_action(ActionKind kind);

/// Runs `options.actions` in order over `jobs` (members carrying their PodGroup's terms, as
/// jobs::build_jobs makes them, observed pending in `state`). Placements, evictions and moves
/// are applied to `state`; evicted pods are forgotten by it (the caller decides what becomes of
/// them: reported, or observed pending again).
CycleResult run_cycle(SchedulingState& state, const Policy& policy, const std::vector<const queues::Job*>& jobs,
                      const CycleOptions& options);

}  // namespace fracpack::cycle
