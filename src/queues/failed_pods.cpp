#include "fracpack/queues/failed_pods.hpp"

#include <algorithm>
#include <string_view>

#include "fracpack/core/node_affinity.hpp"

namespace fracpack::queues {

namespace {

/// `tag`, then `text` with its length in front: no two different lists of fields give one key.
void append(std::string& key, char tag, std::string_view text) {
  key += tag;
  key += std::to_string(text.size());
  key += ':';
  key += text;
}

}  // namespace

FailedPods::Ask FailedPods::ask_of(const PodRequest& pod) {
  Ask ask;
  std::string& key = ask.constraints;
  if (const GpuFraction* f = pod.fraction()) {
    key = f->memory ? "fm" : "fp";
    key += std::to_string(static_cast<int>(f->mode));
    key += '/';
    key += std::to_string(f->num_devices);
    if (f->memory_limit) append(key, 'l', std::to_string(f->memory_limit->count()));
  } else if (const WholeGpus* w = pod.whole()) {
    key = w->shared_slot ? "s" : "w";
  } else {
    key = "c";
  }
  for (const auto& [k, v] : pod.node_selector) {
    append(key, 'k', k);
    append(key, 'v', v);
  }
  if (!pod.node_affinity.empty()) append(key, 'a', describe(pod.node_affinity));
  for (const auto& [k, v] : pod.rdma) {
    append(key, 'r', k);
    append(key, 'n', std::to_string(v));
  }
  for (const auto& [k, v] : pod.extended) {
    append(key, 'e', k);
    append(key, 'n', std::to_string(v));
  }
  if (const GpuFraction* f = pod.fraction()) {
    ask.gpu = f->memory ? f->memory->count() : f->portion->count();
  } else if (const WholeGpus* w = pod.whole()) {
    ask.gpu = w->count;
  }
  ask.cpu = pod.cpu.count();
  ask.memory = pod.memory.count();
  ask.hash = std::hash<std::string>{}(ask.constraints);
  return ask;
}

bool FailedPods::covers(const Ask& ask) const {
  if (ask.alike < failed_class_.size() && failed_class_[ask.alike] != 0) return true;
  return listed(ask);
}

bool FailedPods::listed(const Ask& ask) const {
  if (failed_.empty()) return false;
  auto it = failed_.find(ask.hash);
  if (it == failed_.end()) return false;
  std::vector<Ask>& list = it->second;
  auto hit = std::find_if(list.begin(), list.end(), [&](const Ask& f) { return ask.at_least(f) && f.constraints == ask.constraints; });
  if (hit == list.end()) return false;
  // The next pods asked about are often alike: the failed ask that covered this one goes first.
  if (hit != list.begin()) std::iter_swap(list.begin(), hit);
  return true;
}

void FailedPods::add(const Ask& ask) {
  if (ask.alike != kNoClass) {
    if (ask.alike >= failed_class_.size()) failed_class_.resize(ask.alike + 1, 0);
    failed_class_[ask.alike] = 1;
  }
  if (listed(ask)) return;
  std::vector<Ask>& list = failed_[ask.hash];
  std::erase_if(list, [&](const Ask& f) { return f.at_least(ask) && f.constraints == ask.constraints; });
  list.push_back(ask);
}

}  // namespace fracpack::queues
