#include "fracpack/queues/queue_tree.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::queues {
namespace {

/// Creation time, then name: KAI's last tie-break between queues.
bool older(const QueueSpec& a, const QueueSpec& b) {
  return a.created != b.created ? a.created < b.created : a.name < b.name;
}

std::string quota_text(Resource r, std::int64_t quota) {
  return quota == kUnlimited ? "-1 (unlimited)" : format_amount(r, quota);
}

/// The first cycle of parent links, named queue by queue and closed ("a → b → a"); empty if none.
std::vector<std::size_t> first_cycle(const std::vector<std::optional<std::size_t>>& parent) {
  const std::size_t n = parent.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> path;
    std::optional<std::size_t> at = i;
    while (at && std::find(path.begin(), path.end(), *at) == path.end() && path.size() <= n) {
      path.push_back(*at);
      at = parent[*at];
    }
    if (at) {
      std::vector<std::size_t> loop(std::find(path.begin(), path.end(), *at), path.end());
      loop.push_back(*at);
      return loop;
    }
  }
  return {};
}

}  // namespace

Result<QueueTree> QueueTree::build(std::vector<QueueSpec> queues, std::vector<std::string>* warnings) {
  QueueTree t;
  std::sort(queues.begin(), queues.end(), older);
  t.queues_ = std::move(queues);
  if (Status st = t.index_names(); !st.is_ok()) return st;
  if (Status st = t.link_parents(); !st.is_ok()) return st;
  if (auto loop = first_cycle(t.parents_); !loop.empty()) {
    std::vector<std::string> names;
    for (std::size_t q : loop) names.push_back(t.queues_[q].name);
    return invalid_argument("queue {}: spec.parentQueue links form a cycle: {}", names.front(), fmt::join(names, " → "));
  }
  t.order();
  if (warnings != nullptr) t.warn_quotas(*warnings);
  return t;
}

Status QueueTree::index_names() {
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    if (!by_name_.emplace(queues_[i].name, i).second) {
      return invalid_argument("queue {}: metadata.name appears twice", queues_[i].name);
    }
  }
  return Status::ok();
}

Status QueueTree::link_parents() {
  parents_.assign(queues_.size(), std::nullopt);
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    const QueueSpec& q = queues_[i];
    if (q.parent.empty()) continue;
    auto p = find(q.parent);
    if (!p) return invalid_argument("queue {}: spec.parentQueue \"{}\" is not a queue in the input", q.name, excerpt(q.parent));
    parents_[i] = *p;
  }
  return Status::ok();
}

void QueueTree::order() {
  const std::size_t n = queues_.size();
  children_.assign(n, {});
  for (std::size_t i = 0; i < n; ++i) {  // queues are in creation order, so children are too
    if (parents_[i]) {
      children_[*parents_[i]].push_back(i);
    } else {
      roots_.push_back(i);
    }
  }
  // Pre-order from each root, children oldest first: parents before children, and the order a
  // tree is read in.
  std::vector<std::size_t> stack(roots_.rbegin(), roots_.rend());
  while (!stack.empty()) {
    const std::size_t q = stack.back();
    stack.pop_back();
    top_down_.push_back(q);
    for (auto it = children_[q].rbegin(); it != children_[q].rend(); ++it) stack.push_back(*it);
  }
  paths_.resize(n);
  for (std::size_t q = 0; q < n; ++q) {
    paths_[q] = {q};
    for (auto p = parents_[q]; p; p = parents_[*p]) paths_[q].push_back(*p);
  }
}

void QueueTree::warn_quotas(std::vector<std::string>& warnings) const {
  for (std::size_t i = 0; i < queues_.size(); ++i) {
    for (Resource r : kResources) warn_quota(i, r, warnings);
  }
}

void QueueTree::warn_quota(std::size_t q, Resource r, std::vector<std::string>& warnings) const {
  const std::int64_t mine = queues_[q].resource(r).quota;
  std::int64_t sum = 0;
  bool unlimited_child = false;
  for (std::size_t c : children_[q]) {
    const std::int64_t child = queues_[c].resource(r).quota;
    if (mine != kUnlimited && (child == kUnlimited || child > mine)) {
      warnings.push_back(fmt::format("queue {}: {}.quota {} exceeds its parent {}'s {} (KAI allows it; the "
                                     "parent's share still caps it)",
                                     queues_[c].name, resource_name(r), quota_text(r, child), queues_[q].name,
                                     quota_text(r, mine)));
    }
    unlimited_child = unlimited_child || child == kUnlimited;
    if (child != kUnlimited) sum += child;
  }
  if (mine != kUnlimited && !unlimited_child && children_[q].size() > 1 && sum > mine) {
    warnings.push_back(fmt::format("queue {}: its children's {}.quota add up to {}, above its own {}", queues_[q].name,
                                   resource_name(r), format_amount(r, sum), format_amount(r, mine)));
  }
}

std::optional<std::size_t> QueueTree::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::size_t QueueTree::depth(std::size_t q) const { return path_to_root(q).size() - 1; }

}  // namespace fracpack::queues
