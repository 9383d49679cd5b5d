// Gangs: a PodGroup's pods placed all-or-nothing, with KAI's sub-groups and topology constraints
// (docs/placement.md rules 7, 18 and 19).
//
// A PodGroup without sub-groups is one gang: its first minMember pending members (every one when
// minMember is 0) are placed together or not at one. With `subGroups` it is a tree (KAI's
// SubGroupSet and PodSet, pkg/scheduler/api/podgroup_info/subgroup_info): each leaf sub-group
// gangs its own minMember pods (at least 1, as KAI's PodSet), a sub-group with children (and the
// PodGroup itself) needs `minSubGroup` of its direct children satisfied (all of them when unset;
// KAI's min-subgroups design), and pods join a leaf by the label kai.scheduler/subgroup-name
// (none: the sub-group named "default", as KAI's DefaultSubGroup). A `topologyConstraint`
// on the PodGroup or a sub-group keeps that part's pods within one value of a node label
// (required), or tries to (preferred): KAI's Topology levels are node label keys.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack {

/// The result of placing one pod: a placement, or why there is none.
struct PlaceOutcome {
  std::optional<Placement> placement;
  Explanation why;  ///< meaningful when placement is empty
};

/// KAI's TopologyConstraint (pkg/apis/scheduling/v2alpha2/podgroup_types.go). Levels are node
/// label keys ("topology.kubernetes.io/zone", "rack"); "" is none.
struct TopologyConstraint {
  std::string topology;         ///< the KAI Topology object's name: informational, fracpack reads levels off node labels
  std::string required_level;   ///< every pod of the part on nodes with one value of this label
  std::string preferred_level;  ///< tried first: every pod of the part under one value of this label
  [[nodiscard]] bool empty() const { return required_level.empty() && preferred_level.empty(); }
};

/// KAI's SubGroup: a named part of a PodGroup.
struct SubGroupSpec {
  std::string name;
  std::string parent;                 ///< "" : the PodGroup itself
  int min_member = 0;                 ///< a leaf's pods that start together (0 counts as 1, as in KAI); ignored on a sub-group with children
  std::optional<int> min_sub_group;   ///< a sub-group with children: how many must be satisfied (unset: all)
  TopologyConstraint topology;
};

/// What a PodGroup asks of its pods' placement together.
struct GangRule {
  int min_member = 0;                 ///< without sub-groups: pods together (0: every member)
  std::optional<int> min_sub_group;   ///< with sub-groups: direct children satisfied (unset: all)
  TopologyConstraint topology;
  std::vector<SubGroupSpec> sub_groups;
  /// Sub-groups or a topology constraint anywhere: the rule is more than a count of pods.
  [[nodiscard]] bool structured() const;
  /// Whether its pods are placed together at all (minMember above 1, or structured()).
  [[nodiscard]] bool together() const { return min_member > 1 || structured(); }
};

/// The first rule `rule` breaks (KAI's PodGroup validation and min-subgroups design): a duplicate
/// or empty sub-group name, a parent no sub-group has, a cycle of parents, minMember with
/// minSubGroup on one level, minSubGroup on a leaf or above its children's count, a negative
/// count. (minMember on a sub-group with children is no error: KAI's own podgrouper writes it,
/// and KAI ignores it.) The message names the field ("spec.subGroups[1].parent"); nullopt when valid.
std::optional<std::string> check_gang_rule(const GangRule& rule);

/// A member of the gang already on a node (running, or bound earlier).
struct GangRunning {
  std::string sub_group;  ///< its kai.scheduler/subgroup-name ("" for none)
  std::size_t node = 0;   ///< node index in the ClusterState
};

/// A PodGroup's pending members and what they must satisfy.
struct Gang {
  std::string name;
  std::vector<PodRequest> members;  ///< pending, in arrival order
  int min_member = 0;               ///< without a rule: the first min_member all-or-nothing; 0 = all
  const GangRule* rule = nullptr;   ///< the PodGroup's rule (min_member is then the rule's); not owned
  std::vector<GangRunning> running; ///< members already on nodes: they count toward the minimums and anchor topology
};

/// Where a gang stands against its minimum, by KAI's elastic plugin (pkg/scheduler/plugins/elastic,
/// minAvailableState): below when some leaf sub-group (the PodGroup itself without sub-groups) has
/// fewer pods on nodes than its minMember; at it when every leaf has exactly its minMember; above
/// otherwise. KAI serves jobs below their minimum first, then jobs at it, then jobs above it
/// (docs/queues.md rule 11).
enum class GangProgress { kBelowMinimum, kAtMinimum, kAboveMinimum };

/// Places one gang step by step on a state the caller holds exclusively: first its minimum (all or
/// nothing), then each further step: the minimum of a sub-group not yet satisfied, or one more
/// member of a satisfied one, each kept inside the topology domains its placed parts chose.
/// InfiniBand gangs with no constraint of their own prefer one network leaf (rule 7).
class GangPlacer {
 public:
  GangPlacer(ClusterState& state, const Gang& gang, const Policy& policy, std::size_t detailed = SIZE_MAX,
             ExplainCache* cache = nullptr);
  ~GangPlacer();
  GangPlacer(const GangPlacer&) = delete;
  GangPlacer& operator=(const GangPlacer&) = delete;

  /// Whether the running members alone satisfy the gang.
  [[nodiscard]] bool satisfied() const;
  /// Whether the pending members could satisfy it, counting only (no placement): false means it
  /// waits for more members. `why` says what is missing.
  [[nodiscard]] bool enough_members(std::string* why = nullptr) const;
  /// The members a minimum would take when they all fit, by count (the first of each leaf, the
  /// first children that can be satisfied): what admission asks for before placement.
  [[nodiscard]] std::vector<std::size_t> minimum_by_count() const;

  /// Places the minimum all-or-nothing; true when placed (or nothing was needed). On false,
  /// nothing is held and every member's outcome says why.
  bool place_minimum();
  /// Places the next step after the minimum (the member next_member() names); returns the members it
  /// placed (empty when that step failed: its members' outcomes say why). nullopt when no step
  /// is left. `member`: the step of that member only.
  std::optional<std::vector<std::size_t>> place_step(std::optional<std::size_t> member = std::nullopt);
  /// Releases the members of the last place_step() again (a queue refused them): they keep
  /// `why` as their outcome.
  void undo_step(const std::vector<std::size_t>& members, const Explanation& why);
  /// Releases everything placed (a queue refused the minimum): every member keeps `why`.
  void undo_all(const Explanation& why);

  /// The member the next place_step() starts with, as KAI's elastic phase picks it
  /// (podgroup_info.GetTasksToAllocate with the subgrouporder plugin): from the root down, in a
  /// satisfied part the child below its minimum, else the one with the lowest ratio of what it has
  /// on nodes to its minimum; in an unsatisfied part its first waiting member. nullopt when no
  /// step is left.
  [[nodiscard]] std::optional<std::size_t> next_member() const;
  /// Where the gang stands against its minimum, with what it placed so far.
  [[nodiscard]] GangProgress progress() const;
  /// Gives up on every member not placed nor refused yet (KAI leaves a job's further members for
  /// the next session once one step fails): each keeps `why` as its outcome.
  void stop(const Explanation& why);

  [[nodiscard]] const std::vector<PlaceOutcome>& outcomes() const;
  /// Members refused before placement: a sub-group label that names no leaf sub-group.
  [[nodiscard]] bool orphan(std::size_t member) const;

 private:
  friend std::vector<std::size_t> gang_minimum_by_count(const Gang& gang);
  friend bool gang_satisfied(const Gang& gang);
  friend bool gang_has_enough_members(const Gang& gang, std::string* why);
  friend std::size_t gang_running_in_tree(const Gang& gang);
  friend GangProgress gang_progress(const Gang& gang);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// GangPlacer::minimum_by_count() without a cluster: the members the gang's minimum takes when
/// they all fit (empty when too few are pending). Admission's ask.
std::vector<std::size_t> gang_minimum_by_count(const Gang& gang);
/// GangPlacer::satisfied() without a cluster: whether the running members satisfy the gang.
bool gang_satisfied(const Gang& gang);
/// GangPlacer::enough_members() without a cluster.
bool gang_has_enough_members(const Gang& gang, std::string* why = nullptr);
/// The running members that belong to the gang's tree (a structured PodGroup's members whose
/// label names no leaf are not in KAI's job, and count for nothing).
std::size_t gang_running_in_tree(const Gang& gang);
/// GangPlacer::progress() without a cluster: where the running members alone stand.
GangProgress gang_progress(const Gang& gang);

/// Places a gang whole (see GangPlacer): its minimum all-or-nothing, then every further member it
/// can. One outcome per member, in order.
std::vector<PlaceOutcome> place_gang(ClusterState& state, const Gang& gang, const Policy& policy,
                                     std::size_t detailed = SIZE_MAX, ExplainCache* cache = nullptr);

}  // namespace fracpack
