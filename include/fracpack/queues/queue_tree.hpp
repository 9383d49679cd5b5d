// The queue hierarchy: a forest of KAI Queues linked by spec.parentQueue (each queue's parent
// and children by position). Only leaf queues hold jobs; usage of a leaf counts in
// every ancestor.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fracpack/queues/queue.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::queues {

class QueueTree {
 public:
  /// Builds the tree. kInvalidArgument naming the queue and field for: a duplicate name, a
  /// parentQueue that does not exist, a cycle of parentQueue links (listed in order). Warnings
  /// (KAI allows these) for a child whose quota exceeds its parent's, and for children whose
  /// quotas sum above their parent's.
  static Result<QueueTree> build(std::vector<QueueSpec> queues, std::vector<std::string>* warnings = nullptr);

  [[nodiscard]] std::size_t size() const { return queues_.size(); }
  [[nodiscard]] const QueueSpec& queue(std::size_t q) const { return queues_[q]; }
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
  [[nodiscard]] std::optional<std::size_t> parent(std::size_t q) const { return parents_[q]; }
  [[nodiscard]] const std::vector<std::size_t>& children(std::size_t q) const { return children_[q]; }
  [[nodiscard]] bool is_leaf(std::size_t q) const { return children_[q].empty(); }
  /// Queues without a parent, in creation order (then name).
  [[nodiscard]] const std::vector<std::size_t>& roots() const { return roots_; }
  /// Every queue in pre-order: parents before children, siblings oldest first (then by name).
  [[nodiscard]] const std::vector<std::size_t>& top_down() const { return top_down_; }
  /// 0 for a top-level queue.
  [[nodiscard]] std::size_t depth(std::size_t q) const;
  /// `q` and its ancestors, leaf first (computed once when the tree is built).
  [[nodiscard]] const std::vector<std::size_t>& path_to_root(std::size_t q) const { return paths_[q]; }

 private:
  Status index_names();   ///< by_name_; a duplicate name is an error
  Status link_parents();  ///< parents_; a parentQueue that is not in the input is an error
  void order();           ///< children_, roots_, top_down_, paths_ (no cycle by now)
  void warn_quotas(std::vector<std::string>& warnings) const;
  void warn_quota(std::size_t q, Resource r, std::vector<std::string>& warnings) const;

  std::vector<QueueSpec> queues_;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::vector<std::optional<std::size_t>> parents_;
  std::vector<std::vector<std::size_t>> children_;
  std::vector<std::size_t> roots_;
  std::vector<std::size_t> top_down_;
  std::vector<std::vector<std::size_t>> paths_;  ///< path_to_root per queue
};

}  // namespace fracpack::queues
