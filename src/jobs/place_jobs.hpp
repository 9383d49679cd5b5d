// Turning pending pods into jobs (single pods and PodGroup gangs). Internal to src/jobs/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/queues/session.hpp"
#include "jobs/place_inputs.hpp"

namespace fracpack::jobs {

/// Bound members of each PodGroup ("namespace/name"), with their sub-group and node.
using RunningMembers = std::map<std::string, std::vector<GangRunning>>;

/// Jobs in input order (a gang where its first pending member stands). A flat gang's minMember is
/// lowered by its members already running, and one whose minimum they already meet becomes single
/// pods; a structured one (sub-groups, topology) keeps its rule and its running members, which
/// count toward its minimums and anchor its topology (docs/placement.md rules 18, 19). Each member is taken as the state makes it (SchedulingState::effective: its PodGroup's
/// queue, priority class and preemptibility). With queues, each job's queue must be a leaf queue;
/// jobs that name no queue, or a parent queue, are reported as Invalid and left out.
std::vector<queues::Job> build_jobs(const PlaceInputs& in, const SchedulingState& state,
                                    const RunningMembers& running_in_gang, PlaceReport& report);

}  // namespace fracpack::jobs
