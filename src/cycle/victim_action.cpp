// KAI's reclaim and preempt actions (pkg/scheduler/actions/reclaim, actions/preempt): a waiting
// job placed on what its victims give back, victims and placement in one Statement.
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cycle/actions.hpp"
#include "fracpack/binpack/gang.hpp"
#include "fracpack/queues/statement.hpp"

namespace fracpack::cycle {
namespace {

/// Places `job` where the search put it once its victims are gone (Victims::placed: a single
/// pod on the node they free, a gang's minimum), each member as placed there.
bool place_job(SchedulingState& state, const queues::Victims& victims, Statement& statement) {
  if (victims.placed.empty()) return false;
  for (const Placement& p : victims.placed) {
    auto node = state.cluster().find_node(p.node);
    if (!node || !statement.place(p.pod, *node, p.choice).is_ok()) return false;
  }
  return true;
}

/// Whether `record`'s queue admits it back as the state stands without it: as a pod made again
/// is admitted (its pending charge, SchedulingState::admit), which is how it comes back through
/// kube-scheduler.
bool admitted_back(const SchedulingState& state, const PodRecord& record) { return !state.admit(record.pod); }

/// Evicts `victims` and places `job` where the search put it, in `statement`, its queue admitting it once they are gone; then places again the
/// victims the search moved (`moved`: those kept). False: nothing kept.
bool evict_and_place(SchedulingState& state, const queues::Job& job, const queues::Victims& victims,
                     queues::VictimPass pass, Statement& statement, std::vector<queues::Move>& moved) {
  std::map<std::string, PodRecord> leaving;  // as they ran: a moved one comes back on these terms
  for (const std::string& victim : victims.leaving()) {
    if (const PodRecord* r = state.pod(victim)) leaving.emplace(victim, *r);
    if (!statement.evict(victim).is_ok()) return false;
  }
  if (const queues::QueueBook* book = state.book(); book != nullptr && book->admit(job.queue, job.charge, job.preemptible)) {
    return false;  // its queue still refuses it with the victims gone
  }
  if (!place_job(state, victims, statement)) return false;
  for (const queues::Move& m : victims.moves) {  // the victims that run on elsewhere
    if (!admitted_back(state, leaving.at(m.pod))) {
      // Back in its queue it would pass a limit (the job took its room): KAI's re-allocation of
      // the victim fails, and it is evicted after all. A reclaim was judged without it going.
      if (pass == queues::VictimPass::kReclaim) return false;
      continue;
    }
    auto node = state.cluster().find_node(m.to_node);
    if (!node || !statement.rebind(m.pod, *node, m.to).is_ok()) return false;
    moved.push_back(m);
  }
  return true;
}

/// What makes two single-pod jobs alike for the search: the same ask, queue, priority and
/// preemptibility find the same victims (or none) on the same ledger. A replay asks this of
/// thousands of waiting pods each cycle: its Ask::alike class number stands for the ask; else the
/// pod's shape does.
class Hopeless {
 public:
  /// Whether an alike job found nothing since the ledger last changed (never for a gang).
  bool covers(const queues::Job& job) {
    if (!job.single_pod()) return false;
    if (job.ask.alike != queues::FailedPods::kNoClass) return by_class_.count(class_key(job)) > 0;
    return by_shape_.count(shape_key(job)) > 0;
  }
  void add(const queues::Job& job) {
    if (!job.single_pod()) return;
    if (job.ask.alike != queues::FailedPods::kNoClass) {
      by_class_.insert(class_key(job));
    } else {
      by_shape_.insert(shape_key(job));
    }
  }
  void clear() {
    by_class_.clear();
    by_shape_.clear();
  }

 private:
  using ClassKey = std::tuple<std::size_t, std::size_t, std::int32_t, bool>;
  static ClassKey class_key(const queues::Job& job) { return {job.ask.alike, job.queue, job.priority, job.preemptible}; }
  static std::string shape_key(const queues::Job& job) {
    const std::string& shape = job.shape.empty() ? pod_shape(job.members.front()) : job.shape;
    return fmt::format("{}#{}#{}#{}", shape, job.queue, job.priority, job.preemptible);
  }
  std::set<ClassKey> by_class_;
  std::set<std::string> by_shape_;
};

}  // namespace

void VictimAction::execute(CycleContext& cycle) const {
  std::vector<const queues::Job*> waiting;
  Hopeless hopeless;
  for (const queues::Job* job : cycle.waiting) {
    if (hopeless.covers(*job) || within_preemption_delay(cycle, *job)) {
      waiting.push_back(job);
      continue;
    }
    auto victims = cycle.state.find_victims(*job, cycle.policy, pass_, cycle.options.shield_lapse);
    Statement statement(cycle.state);
    std::vector<queues::Move> moved;
    if (!victims || !evict_and_place(cycle.state, *job, *victims, pass_, statement, moved)) {
      hopeless.add(*job);
      waiting.push_back(job);
      continue;  // the statement rolls back
    }
    hopeless.clear();
    Decision d;
    d.action = kind();
    d.job = job;
    d.part_of = cycle.part_of(job);
    d.victims = statement.evicted();
    d.moves = std::move(moved);
    statement.commit();
    d.placed = placements_of(cycle.state, *job);
    cycle.result.decisions.push_back(std::move(d));
  }
  cycle.waiting = std::move(waiting);
}

}  // namespace fracpack::cycle
