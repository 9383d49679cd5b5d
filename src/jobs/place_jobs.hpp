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

/// Jobs in input order (a gang where its first pending member stands). A gang's minMember is
/// lowered by its members already running; a gang whose minimum they already meet becomes single
/// pods. Each member is taken as the state makes it (SchedulingState::effective: its PodGroup's
/// queue, priority class and preemptibility). With queues, each job's queue must be a leaf queue;
/// jobs that name no queue, or a parent queue, are reported as Invalid and left out.
std::vector<queues::Job> build_jobs(const PlaceInputs& in, const SchedulingState& state,
                                    const std::map<std::string, int>& running_in_gang, PlaceReport& report);

}  // namespace fracpack::jobs
