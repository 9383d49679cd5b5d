// KAI's own unit tables for the proportion plugin's reclaim rules
// (pkg/scheduler/plugins/proportion/reclaimable/reclaimable_test.go at the commit
// docs/kai-compatibility.md pins), case by case, with KAI's names and figures: each queue's
// deserved quota, fair share and allocation are set as KAI's test sets them, and
// can_reclaim / may_take_from / reclaimable must answer as KAI's functions do.
#include <cmath>
#include <map>
#include <optional>

#include <doctest/doctest.h>

#include "fracpack/queues/reclaimable.hpp"

namespace fracpack::queues {
namespace {

std::int64_t gpus(double n) { return std::llround(n * 1000); }  // KAI writes GPUs; we count milli-GPUs

/// One queue of a KAI table. KAI's zero-valued CPU and memory shares (deserved, fair share,
/// allocated and MaxAllowed all 0) are the default; GPU's MaxAllowed is unlimited, as in KAI's
/// buildQueues.
struct Row {
  std::string name;
  std::string parent;
  Amounts deserved;
  Amounts fair_share;
  Amounts allocated;
  Amounts non_preemptible{};
};

Row gpu_row(const std::string& name, const std::string& parent, double deserved, double fair_share, double allocated,
            double non_preemptible = 0) {
  return {name, parent, {gpus(deserved), 0, 0}, {gpus(fair_share), 0, 0}, {gpus(allocated), 0, 0}, {gpus(non_preemptible), 0, 0}};
}

/// A QueueBook holding exactly a table's figures.
struct Table {
  QueueTree tree;
  std::optional<QueueBook> book;

  explicit Table(const std::vector<Row>& rows) : tree(build(rows)) {
    book.emplace(tree);
    for (const Row& row : rows) {
      book->set_figures(*tree.find(row.name), row.allocated, row.non_preemptible, row.fair_share);
    }
  }
  static QueueTree build(const std::vector<Row>& rows) {
    std::vector<QueueSpec> specs;
    for (const Row& row : rows) {
      QueueSpec spec;
      spec.name = row.name;
      spec.parent = row.parent;
      for (Resource r : kResources) {
        spec.resource(r).quota = row.deserved[r];
        spec.resource(r).limit = r == Resource::kGpu ? kUnlimited : 0;
      }
      specs.push_back(spec);
    }
    auto tree = QueueTree::build(specs);
    REQUIRE_MESSAGE(tree.is_ok(), tree.status().message());
    return *tree;
  }
  [[nodiscard]] std::size_t at(const std::string& name) const { return *tree.find(name); }
  [[nodiscard]] Reclaimer reclaimer(const std::string& queue, const Amounts& request, bool preemptible = true) const {
    return {at(queue), request, preemptible};
  }
  [[nodiscard]] bool reclaimable(const Reclaimer& who, const std::vector<std::pair<std::string, double>>& victims) const {
    std::vector<Release> releases;
    for (const auto& [queue, n] : victims) releases.push_back({at(queue), {gpus(n), 0, 0}});
    return queues::reclaimable(*book, who, releases);
  }
};

/// KAI's NewResource(milliCPU, memory, gpus), in our order.
Amounts resource(double cpu, double memory, double gpu) {
  return {gpus(gpu), std::llround(cpu), std::llround(memory)};
}

struct CanReclaimCase {
  const char* name;
  Amounts request;
  bool preemptible;
  Amounts deserved, fair_share, allocated, non_preemptible;
  bool expected;
};

TEST_CASE("KAI reclaimable_test.go: Can Reclaim Resources") {
  const Amounts none{};
  const std::vector<CanReclaimCase> cases{
      // Preemptible job: the queue holding the job stays within its fair share.
      {"No allocated resources, below fair share", resource(1000, 1000, 1), true, none, resource(2000, 2000, 2), none, none, true},
      {"Some resources allocated, below fair share", resource(1000, 1000, 1), true, none, resource(3000, 3000, 3),
       resource(1000, 1000, 1), none, true},
      {"Some resources at fair share with job, other stay below", resource(500, 1000, 0), true, none, resource(2000, 2000, 2),
       resource(1000, 1000, 1), none, true},
      {"Exactly at fair share with job", resource(1000, 1000, 1), true, none, resource(2000, 2000, 2), resource(1000, 1000, 1),
       none, true},
      {"Partially above fair share", resource(1, 1000, 1000), true, none, resource(1500, 3000, 1), resource(1000, 1000, 1), none,
       false},
      {"Fully above fair share", resource(1, 1000, 1000), true, none, resource(1500, 1500, 1), resource(1000, 1000, 1), none, false},
      {"Queue partially above fair share without job resources", resource(1, 1000, 1000), true, none, resource(3000, 3000, 0),
       resource(2000, 1000, 1), none, false},
      // Non-preemptible job: also its queue's non-preemptible jobs within quota.
      {"No allocated resources, below quota", resource(1000, 1000, 1), false, resource(2000, 2000, 2), resource(2000, 2000, 2),
       none, none, true},
      {"No allocated resources, exactly at quota", resource(1000, 1000, 1), false, resource(1000, 1000, 1),
       resource(2000, 2000, 2), none, none, true},
      {"No allocated resources, partially above quota", resource(1, 1000, 1000), false, resource(1000, 500, 0),
       resource(2000, 2000, 2), none, none, false},
      {"Some resources allocated, below quota", resource(1000, 1000, 1), false, resource(3000, 3000, 3), resource(3000, 3000, 3),
       resource(1000, 1000, 1), resource(1000, 1000, 1), true},
      {"Some preemptible resources allocated, zero quota", resource(1, 1000, 1000), false, none, resource(3000, 3000, 3),
       resource(1000, 1000, 1), none, false},
      {"Partially above quota", resource(1, 1000, 1000), false, resource(1500, 3000, 0), resource(3000, 3000, 3),
       resource(1000, 1000, 1), resource(1000, 1000, 1), false},
      {"Fully above quota", resource(1, 1000, 1000), false, resource(1500, 1500, 1), resource(3000, 3000, 3),
       resource(1000, 1000, 1), resource(1000, 1000, 1), false},
      {"Queue partially over quota without job resources", resource(1, 1000, 1000), false, resource(1500, 3000, 0),
       resource(3000, 3000, 3), resource(1000, 1000, 1), resource(1000, 1000, 1), false},
  };
  for (const CanReclaimCase& c : cases) {
    CAPTURE(c.name);
    Table t({{"queue1", "", c.deserved, c.fair_share, c.allocated, c.non_preemptible}});
    CHECK(can_reclaim(*t.book, t.reclaimer("queue1", c.request, c.preemptible)) == c.expected);
  }
}

/// reclaimable_test.go "Reclaimable - Single department": p1 (reclaimer) and p2 under default.
struct SingleDepartment {
  Row p1 = gpu_row("p1", "default", 3, 3, 2);
  Row p2 = gpu_row("p2", "default", 2, 2, 3);
  Row dept = gpu_row("default", "", 5, 5, 5);
  bool preemptible = true;

  [[nodiscard]] bool reclaimable() const {
    Table t({dept, p1, p2});
    return t.reclaimable(t.reclaimer("p1", {gpus(1), 0, 0}, preemptible), {{"p2", 1}});
  }
};

TEST_CASE("KAI reclaimable_test.go: Reclaimable - Single department") {
  SingleDepartment s;
  CHECK(s.reclaimable());  // Reclaimer is below fair share, reclaimee above fair share
  {
    SingleDepartment c;  // Reclaimer is below fair share, reclaimer exactly at fair share
    c.p2.allocated = {gpus(2), 0, 0};
    c.dept.allocated = {gpus(4), 0, 0};
    CHECK_FALSE(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer and reclaimee are below fair share
    c.p2.allocated = {gpus(1), 0, 0};
    c.dept.allocated = {gpus(3), 0, 0};
    CHECK_FALSE(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer below deserved and reclaimee above deserved (within fair share)
    c.p2.fair_share = {gpus(3), 0, 0};
    CHECK(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer at fair share, reclaimee above fair share, department below fair share
    c.p1.allocated = {gpus(3), 0, 0};
    c.dept.allocated = {gpus(6), 0, 0};
    c.dept.deserved = {gpus(7), 0, 0};
    c.dept.fair_share = {gpus(10), 0, 0};  // KAI adds 7 − p2's fair share (2) to its 5
    CHECK_FALSE(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer at fair share, reclaimee above fair share, department above fair share
    c.p1.allocated = {gpus(3), 0, 0};
    c.dept.allocated = {gpus(6), 0, 0};
    CHECK_FALSE(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer above deserved, attempting to reclaim for non preemptible job
    c.p1.deserved = {gpus(2), 0, 0};
    c.preemptible = false;
    CHECK(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer department only preemptible above deserved, non preemptible job
    c.p1.deserved = {gpus(2), 0, 0};
    c.preemptible = false;
    c.dept.deserved = {gpus(3), 0, 0};
    CHECK(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer department nonpreemtible equal to deserved, non preemptible job
    c.p1.deserved = {gpus(2), 0, 0};
    c.preemptible = false;
    c.dept.deserved = {gpus(3), 0, 0};
    c.dept.non_preemptible = {gpus(3), 0, 0};
    CHECK_FALSE(c.reclaimable());
  }
  {
    SingleDepartment c;  // Reclaimer department allocated above fair share, attempting to reclaim for job
    c.p1.deserved = {gpus(2), 0, 0};
    c.dept.deserved = {gpus(1), 0, 0};
    c.dept.fair_share = {gpus(1), 0, 0};
    c.dept.allocated = {gpus(3), 0, 0};
    CHECK(c.reclaimable());
  }
}

TEST_CASE("KAI reclaimable_test.go: Reclaimable - Multiple departments") {
  struct Departments {
    Row p1 = gpu_row("p1", "d1", 3, 3, 2);
    Row p2 = gpu_row("p2", "d2", 2, 2, 3);
    Row d1 = gpu_row("d1", "", 3, 3, 2);
    Row d2 = gpu_row("d2", "", 2, 2, 3);
    [[nodiscard]] bool reclaimable() const {
      Table t({d1, d2, p1, p2});
      return t.reclaimable(t.reclaimer("p1", {gpus(1), 0, 0}), {{"p2", 1}});
    }
  };
  CHECK(Departments{}.reclaimable());  // sanity
  Departments below;  // Reclaimee department goes below fair share
  below.p2.allocated = below.d2.allocated = {gpus(2), 0, 0};
  CHECK_FALSE(below.reclaimable());
  Departments guaranteed;  // Reclaimer department below deserved, reclaimee's above deserved but within fair share
  guaranteed.p1.allocated = guaranteed.d1.allocated = {gpus(1), 0, 0};
  guaranteed.p2.fair_share = guaranteed.d2.fair_share = {gpus(4), 0, 0};
  CHECK(guaranteed.reclaimable());
}

TEST_CASE("KAI reclaimable_test.go: Reclaimable - Multiple hierarchy levels") {
  const Amounts one{gpus(1), 0, 0};
  {
    // Reclaimer is below fair share, reclaimee above fair share - sanity
    Table t({gpu_row("left-top", "", 1, 1, 0), gpu_row("left-mid", "left-top", 1, 1, 0), gpu_row("left-leaf", "left-mid", 1, 1, 0),
             gpu_row("right-top", "", 1, 1, 2), gpu_row("right-mid", "right-top", 1, 1, 2),
             gpu_row("right-leaf", "right-mid", 1, 1, 2)});
    CHECK(t.reclaimable(t.reclaimer("left-leaf", one), {{"right-leaf", 2}}));
  }
  {
    // Reclaimer top queue will go over quota - don't reclaim
    Table t({gpu_row("left-top", "", 1, 1, 1), gpu_row("left-top-oq-leaf", "left-top", 0, 0, 1),
             gpu_row("left-mid", "left-top", 1, 1, 0), gpu_row("left-leaf", "left-mid", 1, 1, 0), gpu_row("right-top", "", 1, 1, 2),
             gpu_row("right-mid", "right-top", 1, 1, 2), gpu_row("right-leaf", "right-mid", 1, 1, 2)});
    CHECK_FALSE(t.reclaimable(t.reclaimer("left-leaf", one), {{"right-leaf", 2}}));
  }
  const std::vector<Row> branch{gpu_row("top", "", 2, 2, 2),           gpu_row("mid1", "top", 1, 1, 0.5),
                                gpu_row("mid2", "top", 1, 1, 1.5),       gpu_row("left-leaf1", "mid1", 1, 1, 0),
                                gpu_row("left-leaf2", "mid1", 0, 0, 0.5), gpu_row("right-leaf", "mid2", 1, 1, 1.5)};
  {
    // Reclaimer in the same tree branch and will go over fair share - don't reclaim
    Table t(branch);
    CHECK_FALSE(t.reclaimable(t.reclaimer("left-leaf1", one), {{"right-leaf", 1.5}}));
  }
  {
    // Reclaimer in the same tree branch - reclaim
    Table t(branch);
    CHECK(t.reclaimable(t.reclaimer("left-leaf1", one), {{"right-leaf", 1.5}, {"left-leaf2", 0.5}}));
  }
  {
    // Reclaimer has lower utilization ratio than reclaimee but over 1
    Table t({gpu_row("d1", "", 4, 4, 4), gpu_row("d1-project-1", "d1", 3, 1, 0), gpu_row("d1-project-2", "d1", 1, 3, 4),
             gpu_row("d2", "", 3, 3, 7), gpu_row("d2-project-1", "d2", 3, 3, 7)});
    CHECK(t.reclaimable(t.reclaimer("d1-project-1", one), {{"d2-project-1", 1}}));
  }
  {
    // Reclamation with uninvolved resources: d1's CPU saturation (3.0) does not count for a GPU job
    Row d1 = gpu_row("d1", "", 4, 4, 4);
    d1.allocated[Resource::kCpu] = 3000;
    d1.fair_share[Resource::kCpu] = 1000;
    Row d2 = gpu_row("d2", "", 3, 3, 7);
    d2.allocated[Resource::kCpu] = 1000;
    d2.fair_share[Resource::kCpu] = 1000;
    Table t({d1, gpu_row("d1-project-1", "d1", 1, 1, 1), d2, gpu_row("d2-project-1", "d2", 3, 3, 7)});
    CHECK(t.reclaimable(t.reclaimer("d1-project-1", one), {{"d2-project-1", 1}}));
  }
}

TEST_CASE("KAI reclaimable_test.go: FilterVictim") {
  const Amounts two{gpus(2), 0, 0};
  struct Case {
    const char* name;
    double reclaimer_deserved, reclaimer_fair, victim_deserved, victim_fair, victim_allocated;
    bool kept;
  };
  const std::vector<Case> cases{
      {"filters victims whose leveled queue is strictly under deserved quota", 4, 4, 4, 4, 2, false},
      {"keeps victims whose leveled queue is over deserved quota", 4, 4, 0, 4, 4, true},
      {"keeps victims exactly at deserved quota for consolidation", 4, 4, 2, 4, 2, true},
      {"filters victims under allocatable share when the reclaimer cannot use deserved quota", 1, 4, 2, 4, 3, false},
      {"keeps victims over allocatable share when the reclaimer cannot use deserved quota", 1, 4, 2, 4, 5, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Table t({gpu_row("reclaimer", "", c.reclaimer_deserved, c.reclaimer_fair, 0),
             gpu_row("victim", "", c.victim_deserved, c.victim_fair, c.victim_allocated)});
    CHECK(may_take_from(*t.book, t.reclaimer("reclaimer", two), t.at("victim")) == c.kept);
  }
}

}  // namespace
}  // namespace fracpack::queues
