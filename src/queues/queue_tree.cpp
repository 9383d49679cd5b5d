#include "fracpack/queues/queue_tree.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fracpack/quoting.hpp"

namespace fracpack::queues {
namespace {

/// Creation time, then name: KAI's last tie-break between queues.
bool older(const QueueSpec& a, const QueueSpec& b) {
  return a.created != b.created ? a.created < b.created : a.name < b.name;
}

std::string quota_text(Resource r, std::int64_t quota) {
  return quota == kUnlimited ? "-1 (unlimited)" : format_amount(r, quota);
}

}  // namespace

Result<QueueTree> QueueTree::build(std::vector<QueueSpec> queues, std::vector<std::string>* warnings) {
  QueueTree t;
  std::sort(queues.begin(), queues.end(), older);
  t.queues_ = std::move(queues);
  const std::size_t n = t.queues_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!t.by_name_.emplace(t.queues_[i].name, i).second) {
      return invalid_argument("queue {}: metadata.name appears twice", t.queues_[i].name);
    }
  }
  t.graph_ = Graph(n);
  t.children_.assign(n, {});
  std::vector<std::optional<std::size_t>> parent(n);
  for (std::size_t i = 0; i < n; ++i) {
    const QueueSpec& q = t.queues_[i];
    if (q.parent.empty()) continue;
    auto p = t.find(q.parent);
    if (!p) return invalid_argument("queue {}: spec.parentQueue \"{}\" is not a queue in the input", q.name, excerpt(q.parent));
    parent[i] = *p;
  }
  // A cycle: follow parent links until a queue repeats; name every queue on the loop.
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> path;
    std::optional<std::size_t> at = i;
    while (at && std::find(path.begin(), path.end(), *at) == path.end() && path.size() <= n) {
      path.push_back(*at);
      at = parent[*at];
    }
    if (at) {
      auto start = std::find(path.begin(), path.end(), *at);
      std::vector<std::string> names;
      for (auto it = start; it != path.end(); ++it) names.push_back(t.queues_[*it].name);
      names.push_back(t.queues_[*at].name);
      return invalid_argument("queue {}: spec.parentQueue links form a cycle: {}", t.queues_[*at].name,
                              fmt::join(names, " → "));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // queues are in creation order, so children are too
    if (parent[i]) {
      boost::add_edge(*parent[i], i, t.graph_);
      t.children_[*parent[i]].push_back(i);
    } else {
      t.roots_.push_back(i);
    }
  }
  // Pre-order from each root, children oldest first: parents before children, and the order a
  // tree is read in. (Boost's topological order would put parents first too, but not siblings.)
  std::vector<std::size_t> stack(t.roots_.rbegin(), t.roots_.rend());
  while (!stack.empty()) {
    const std::size_t q = stack.back();
    stack.pop_back();
    t.top_down_.push_back(q);
    for (auto it = t.children_[q].rbegin(); it != t.children_[q].rend(); ++it) stack.push_back(*it);
  }
  t.paths_.resize(t.queues_.size());
  for (std::size_t q = 0; q < t.queues_.size(); ++q) {
    t.paths_[q] = {q};
    for (auto p = t.parent(q); p; p = t.parent(*p)) t.paths_[q].push_back(*p);
  }

  if (warnings != nullptr) {
    for (std::size_t i = 0; i < n; ++i) {
      for (Resource r : kResources) {
        const std::int64_t mine = t.queues_[i].resource(r).quota;
        std::int64_t sum = 0;
        bool unlimited_child = false;
        for (std::size_t c : t.children_[i]) {
          const std::int64_t child = t.queues_[c].resource(r).quota;
          if (mine != kUnlimited && (child == kUnlimited || child > mine)) {
            warnings->push_back(fmt::format("queue {}: {}.quota {} exceeds its parent {}'s {} (KAI allows it; the "
                                            "parent's share still caps it)",
                                            t.queues_[c].name, resource_name(r), quota_text(r, child), t.queues_[i].name,
                                            quota_text(r, mine)));
          }
          unlimited_child = unlimited_child || child == kUnlimited;
          if (child != kUnlimited) sum += child;
        }
        if (mine != kUnlimited && !unlimited_child && t.children_[i].size() > 1 && sum > mine) {
          warnings->push_back(fmt::format("queue {}: its children's {}.quota add up to {}, above its own {}",
                                          t.queues_[i].name, resource_name(r), format_amount(r, sum),
                                          format_amount(r, mine)));
        }
      }
    }
  }
  return t;
}

std::optional<std::size_t> QueueTree::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> QueueTree::parent(std::size_t q) const {
  auto [begin, end] = boost::in_edges(q, graph_);
  if (begin == end) return std::nullopt;
  return boost::source(*begin, graph_);
}

std::size_t QueueTree::depth(std::size_t q) const { return path_to_root(q).size() - 1; }

}  // namespace fracpack::queues
