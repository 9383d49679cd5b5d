// A tentative change to the scheduling state, kept or undone whole: KAI's Statement
// (pkg/scheduler/framework/statement.go), through which its actions evict victims and place
// (pipeline) jobs before deciding whether the result is one to keep.
//
// Every change is applied to the state at once, so what follows in the same statement sees it
// (a second victim search sees the first's victims gone, a placement the room they left), and
// each is journalled. commit() keeps them; rollback(mark) undoes everything after a checkpoint(),
// newest first; a statement destroyed uncommitted rolls back whole. After a rollback the ledger,
// the queue book and every pod record are exactly as they were: the same GPUs, the same starts.
//
// Not thread-safe; one statement at a time per state (the caller holds the state's lock).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/binpack/gang.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack {

class Statement {
 public:
  explicit Statement(SchedulingState& state) : state_(state) {}
  ~Statement() { rollback(0); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// A bound pod leaves its node (a victim): what it held is released and its queue uncharged.
  /// kNotFound when `pod_key` is not bound (kBound) in the state; kFailedPrecondition when it is
  /// held for its gang's plan (not running). O(log nodes + queue depth).
  Status evict(const std::string& pod_key);
  /// A pending pod of the state placed on `node` with `choice` (KAI: allocated or pipelined),
  /// charged to its queue on its PodGroup's terms, its start now. No admission check: the caller
  /// decided. kNotFound (not pending), kUnschedulable (the ledger refuses the choice).
  Status place(const std::string& pod_key, std::size_t node, const GpuChoice& choice);
  /// A pod evicted in this statement bound again, on `node` with `choice` (consolidation moves
  /// every pod off before placing any): a new run there. kNotFound when it was not evicted here
  /// (or is bound again already), kUnschedulable (the ledger refuses the choice).
  Status rebind(const std::string& pod_key, std::size_t node, const GpuChoice& choice);
  /// evict() then rebind(): a bound pod moved to `node` with `choice`, all or nothing.
  Status move(const std::string& pod_key, std::size_t node, const GpuChoice& choice);
  /// A pending pod placed where `policy` puts it among `nodes` (all when null): place() on the
  /// node select() picks. kUnschedulable (nothing changed) when it fits none.
  Status place_pod(const std::string& pod_key, const Policy& policy, const NodeMask* nodes = nullptr);
  /// A gang's minimum placed all or nothing where GangPlacer puts it (docs/placement.md rules 7,
  /// 18, 19), each member as place() does. kUnschedulable (nothing changed) when it does not fit.
  Status place_gang(const Gang& gang, const Policy& policy);

  /// How many changes are journalled: rollback(checkpoint()) undoes what follows.
  [[nodiscard]] std::size_t checkpoint() const { return undo_.size(); }
  /// Undoes the changes after `mark`, newest first.
  void rollback(std::size_t mark);
  /// Keeps every change; the statement is empty afterwards.
  void commit();

  /// Pods evicted and not undone, in the order they went (not those moved: they are bound again).
  [[nodiscard]] std::vector<std::string> evicted() const;

 private:
  struct Undo {
    enum class Kind { kEvicted, kPlaced } kind;
    std::string key;
    PodRecord before;                 ///< the record as it was
    std::optional<Allocation> held;   ///< kEvicted: what it held
    bool existed = true;              ///< kPlaced: false when the pod was not in the state at all
  };
  SchedulingState& state_;
  std::vector<Undo> undo_;
};

}  // namespace fracpack
