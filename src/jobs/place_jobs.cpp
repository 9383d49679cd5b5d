#include "jobs/place_jobs.hpp"

#include <set>

#include <fmt/format.h>

#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/k8s/priority.hpp"

namespace fracpack::jobs {
namespace {

queues::Job single(const InputPod& p) {
  queues::Job job;
  job.name = p.pod.key();
  job.members = {p.pod};
  job.min_member = 1;
  job.priority = p.pod.priority;
  job.created = p.pod.created;
  job.preemptible = p.pod.preemptible;
  job.input_order = p.order;
  return job;
}

}  // namespace

std::vector<queues::Job> build_jobs(const PlaceInputs& in, const SchedulingState& state,
                                    const RunningMembers& running_in_gang, PlaceReport& report) {
  std::vector<queues::Job> jobs;
  std::set<std::string> gangs_done;
  for (std::size_t i = 0; i < in.pending.size(); ++i) {
    const InputPod& first = in.pending[i];
    if (!first.pod.gang) {
      InputPod p = first;
      if (auto e = state.effective(p.pod)) p.pod = std::move(*e);
      jobs.push_back(single(p));
      continue;
    }
    const std::string key = first.pod.gang_key();
    if (!gangs_done.insert(key).second) continue;
    auto group = in.groups.find(key);
    std::vector<InputPod> members;
    std::optional<std::string> bad_group;
    for (std::size_t j = i; j < in.pending.size(); ++j) {
      const PodRequest& p = in.pending[j].pod;
      if (p.gang && p.gang_key() == key) {
        members.push_back(in.pending[j]);
        auto e = state.effective(members.back().pod);
        if (e) {
          members.back().pod = std::move(*e);
        } else {
          bad_group = e.status().message();
        }
      }
    }
    if (bad_group) {
      for (const auto& m : members) report.unschedulable.push_back(NotPlaced::refused(m.pod.key(), "Invalid", *bad_group));
      continue;
    }
    if (group == in.groups.end()) {
      report.warnings.push_back(fmt::format(
          "pod {} names PodGroup {}, which is not in the input; its {} pending pod(s) are placed all-or-nothing",
          first.pod.key(), key, members.size()));
    }
    auto running = running_in_gang.find(key);
    const std::vector<GangRunning> on_nodes = running == running_in_gang.end() ? std::vector<GangRunning>{} : running->second;
    queues::Job job = single(members.front());
    job.name = key;
    job.members.clear();
    for (const auto& m : members) job.members.push_back(m.pod);
    if (group != in.groups.end() && group->second.structured()) {  // sub-groups, topology: the whole rule, with what runs
      job.rule = std::make_shared<const GangRule>(group->second);
      job.running = on_nodes;
      job.min_member = group->second.min_member;
      jobs.push_back(std::move(job));
      continue;
    }
    const int min_member = group == in.groups.end() || group->second.min_member == 0
                               ? static_cast<int>(members.size())
                               : group->second.min_member;
    const int remaining = min_member - static_cast<int>(on_nodes.size());
    if (remaining <= 0) {  // the running members already meet the minimum: each further pod goes alone
      for (const auto& m : members) {
        jobs.push_back(single(m));
        jobs.back().progress = remaining == 0 ? GangProgress::kAtMinimum : GangProgress::kAboveMinimum;
      }
      continue;
    }
    job.min_member = remaining;
    jobs.push_back(std::move(job));
  }
  const queues::QueueTree* tree = state.tree();
  if (tree == nullptr) return jobs;

  std::vector<queues::Job> kept;
  for (auto& job : jobs) {
    if (auto problem = state.queue_problem(job.members.front())) {
      for (const auto& m : job.members) report.unschedulable.push_back(NotPlaced::refused(m.key(), "Invalid", fmt::format("pod {}: {}", m.key(), *problem)));
      continue;
    }
    job.queue = *state.leaf_queue(job.members.front());
    kept.push_back(std::move(job));
  }
  return kept;
}

}  // namespace fracpack::jobs
