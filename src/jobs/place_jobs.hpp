// Turning pending pods into jobs (single pods and PodGroup gangs). Internal to src/jobs/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/queues/session.hpp"
#include "jobs/place_inputs.hpp"

namespace fracpack::jobs {

/// Applies a PodGroup's queue, priority class and preemptibility to one member (pending or
/// running). Returns an error message when the group names an unknown priority class.
std::optional<std::string> apply_group(const queues::PodGroupSpec& group, const PriorityClasses& classes, PodRequest& pod);

/// Jobs in input order (a gang where its first pending member stands). A gang's minMember is
/// lowered by its members already running; a gang whose minimum they already meet becomes single
/// pods. The PodGroup's queue, priority class and preemptibility, when set, apply to every member.
/// With `tree`, each job's queue must be a leaf queue of it; jobs that name no queue of the tree,
/// or a parent queue, are reported as Invalid and left out.
std::vector<queues::Job> build_jobs(const PlaceInputs& in, const std::map<std::string, int>& running_in_gang,
                                    const queues::QueueTree* tree, PlaceReport& report);

}  // namespace fracpack::jobs
