// KAI's victim order (victim_order.hpp).
#include "queues/victim_order.hpp"

#include <algorithm>
#include <map>
#include <queue>

namespace fracpack::queues {
namespace {

/// Latest first; none (just bound) before any.
bool later(const std::optional<std::int64_t>& x, const std::optional<std::int64_t>& y) {
  if (!x || !y) return !x && y;
  return *x > *y;
}

/// KAI's job order reversed (priority, then creation, then UID; the victim queue pops the job the
/// order puts last): the lowest priority first, then the youngest job — the latest first start, a
/// job with none (just bound) before any — then the larger key; within a job, its members above
/// the minimum before its core (KAI pushes the job back after each), the youngest first.
bool leaves_first(const Candidate& a, const Candidate& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.job_started != b.job_started) return later(a.job_started, b.job_started);
  if (a.job != b.job) return a.job > b.job;
  if (a.core != b.core) return !a.core;
  if (a.started != b.started) return later(a.started, b.started);
  return a.pods.front().pod > b.pods.front().pod;
}

/// One victim job's candidates, handed out a batch at a time (podgroup_info.GetTasksToEvict):
/// its members above the minimum first — with sub-groups, from the leaf whose running pods
/// are the largest multiple of its minMember (the subgrouporder plugin reversed; the earlier
/// leaf on a tie), each leaf's youngest first — then its core.
class VictimJobBatches {
 public:
  VictimJobBatches(const std::vector<Candidate>& candidates, std::vector<std::size_t> members)
      : candidates_(&candidates), members_(std::move(members)), used_(members_.size(), false) {
    for (std::size_t m : members_) extras_left_ += candidates[m].core ? 0 : 1;
  }
  [[nodiscard]] bool empty() const { return given_ == members_.size(); }
  [[nodiscard]] bool has_extras() const { return extras_left_ > 0; }
  [[nodiscard]] std::int32_t priority() const { return (*candidates_)[members_.front()].priority; }

  std::size_t next() {
    std::optional<std::size_t> pick;
    for (std::size_t k = 0; k < members_.size(); ++k) {
      if (used_[k] || (*candidates_)[members_[k]].core != !has_extras()) continue;
      if (!pick || gives_before(k, *pick)) pick = k;
    }
    used_[*pick] = true;
    ++given_;
    const Candidate& c = (*candidates_)[members_[*pick]];
    if (!c.core) {
      --extras_left_;
      ++taken_[c.sub_group];
    }
    return members_[*pick];
  }

 private:
  /// Member k's leaf gives before member j's (both extras); else the earlier in leaves_first.
  bool gives_before(std::size_t k, std::size_t j) {
    const Candidate& a = (*candidates_)[members_[k]];
    const Candidate& b = (*candidates_)[members_[j]];
    if (a.sub_group == b.sub_group || a.sub_group_min <= 0 || b.sub_group_min <= 0) return false;
    const std::int64_t ra = a.sub_group_running - taken_[a.sub_group];
    const std::int64_t rb = b.sub_group_running - taken_[b.sub_group];
    if (ra * b.sub_group_min != rb * a.sub_group_min) return ra * b.sub_group_min > rb * a.sub_group_min;
    return a.sub_group < b.sub_group;
  }

  const std::vector<Candidate>* candidates_;
  std::vector<std::size_t> members_;  // in leaves_first order
  std::vector<bool> used_;
  std::map<int, std::int64_t> taken_;  // extras taken per leaf sub-group
  std::size_t extras_left_ = 0;
  std::size_t given_ = 0;
};

/// The candidates of one leaf in the order KAI's victim queue hands them out
/// (podgroup_info.GetTasksToEvict, and the job pushed back with the rest): the job KAI's job order
/// puts last gives next — the lowest priority, then a job above its minimum (its elastic members
/// left) before one at it (the elastic plugin), then leaves_first — one batch at a time
/// (VictimJobBatches).
std::vector<std::size_t> in_victim_order(const std::vector<Candidate>& candidates, std::vector<std::size_t> members) {
  std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) { return leaves_first(candidates[a], candidates[b]); });
  // No member above a minimum: every job gives whole, and the line below is the sorted order.
  if (std::all_of(members.begin(), members.end(), [&](std::size_t m) { return candidates[m].core; })) return members;
  std::vector<VictimJobBatches> jobs;
  for (std::size_t i = 0; i < members.size();) {
    std::size_t end = i + 1;
    while (end < members.size() && candidates[members[end]].job == candidates[members[i]].job) ++end;
    jobs.emplace_back(candidates, std::vector<std::size_t>(members.begin() + static_cast<std::ptrdiff_t>(i),
                                                           members.begin() + static_cast<std::ptrdiff_t>(end)));
    i = end;
  }
  // Gives later: the higher priority, then no elastic members left, then the later job in leaves_first.
  const auto gives_later = [&](std::size_t a, std::size_t b) {
    if (jobs[a].priority() != jobs[b].priority()) return jobs[a].priority() > jobs[b].priority();
    if (jobs[a].has_extras() != jobs[b].has_extras()) return jobs[b].has_extras();
    return a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(gives_later)> line(gives_later);
  for (std::size_t j = 0; j < jobs.size(); ++j) line.push(j);
  std::vector<std::size_t> out;
  out.reserve(members.size());
  while (!line.empty()) {
    const std::size_t j = line.top();
    line.pop();
    out.push_back(jobs[j].next());
    if (!jobs[j].empty()) line.push(j);
  }
  return out;
}

/// KAI GetDominantResourceShare: the largest allocated ÷ allocatable share (the cluster's total
/// for an unlimited one; allocated × 1000 where the share is 0, KAI's noFairShareDrfMultiplier).
double dominant_share(const QueueBook& book, std::size_t q, const Amounts& allocated) {
  double best = 0;
  for (Resource r : kResources) {
    std::int64_t share = book.allocatable(q, r);
    if (share == kUnlimited) share = book.total()[r];
    const double value = share == 0 ? static_cast<double>(allocated[r]) * 1000
                                    : static_cast<double>(allocated[r]) / static_cast<double>(share);
    best = std::max(best, value);
  }
  return best;
}

/// KAI prioritizeUnderQuotaWithJob with no job, reversed: over its quota in some resource.
bool over_quota(const QueueBook& book, std::size_t q) { return !book.within_quota(q, Amounts{}); }

/// KAI penalizeZeroShareWithJob with no job: holds a resource it has no allocatable share of.
bool holds_unshared(const QueueBook& book, std::size_t q) {
  for (Resource r : kResources) {
    if (book.allocatable(q, r) == 0 && book.allocated(q)[r] > 0) return true;
  }
  return false;
}

/// KAI prioritizeBasedOnAllocatableShare: `a`'s allocatable share ≤ `b`'s everywhere and below it
/// somewhere (KAI's compareQuantities: unlimited above all).
bool smaller_allocatable(const QueueBook& book, std::size_t a, std::size_t b) {
  bool below = false;
  for (Resource r : kResources) {
    const std::int64_t x = book.allocatable(a, r);
    const std::int64_t y = book.allocatable(b, r);
    if (x == y) continue;
    const bool less = y == kUnlimited || (x != kUnlimited && x < y);
    if (!less) return false;
    below = true;
  }
  return below;
}

}  // namespace

VictimOrder::VictimOrder(const QueueBook& book, std::vector<Candidate> candidates)
    : book_(book),
      candidates_(std::move(candidates)),
      leaves_(book.tree().size()),
      waiting_(book.tree().size(), 0),
      memo_(book.tree().size()),
      left_(candidates_.size()) {
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const auto& q = candidates_[i].queue;
    if (!q) {
      unknown_.members.push_back(i);
      continue;
    }
    if (!leaves_[*q]) leaves_[*q].emplace();
    leaves_[*q]->members.push_back(i);
    for (std::size_t up : book.tree().path_to_root(*q)) ++waiting_[up];
  }
  for (auto& leaf : leaves_) {
    if (leaf) leaf->members = in_victim_order(candidates_, std::move(leaf->members));
  }
  unknown_.members = in_victim_order(candidates_, std::move(unknown_.members));
}

Amounts VictimOrder::after_victims(std::size_t q, std::size_t leaf) const {
  const Leaf& l = *leaves_[leaf];
  return book_.allocated(q) - l.given - candidates_[l.members[l.next]].give_back;
}

bool VictimOrder::gives_first(std::size_t a, std::size_t b) {
  if (book_.over_fair_share(a) != book_.over_fair_share(b)) return book_.over_fair_share(a);
  if (over_quota(book_, a) != over_quota(book_, b)) return over_quota(book_, a);
  const QueueSpec& qa = book_.tree().queue(a);
  const QueueSpec& qb = book_.tree().queue(b);
  if (qa.priority != qb.priority) return qa.priority < qb.priority;
  if (holds_unshared(book_, a) != holds_unshared(book_, b)) return holds_unshared(book_, a);
  const double with_a = dominant_share(book_, a, after_victims(a, chosen_leaf(a)));
  const double with_b = dominant_share(book_, b, after_victims(b, chosen_leaf(b)));
  if (with_a != with_b) return with_a > with_b;
  const double now_a = dominant_share(book_, a, book_.allocated(a));
  const double now_b = dominant_share(book_, b, book_.allocated(b));
  if (now_a != now_b) return now_a > now_b;
  if (smaller_allocatable(book_, b, a) != smaller_allocatable(book_, a, b)) return smaller_allocatable(book_, b, a);
  if (qa.created != qb.created) return qa.created > qb.created;
  return qa.name > qb.name;
}

std::vector<std::size_t> VictimOrder::active_among(const std::vector<std::size_t>& queues) const {
  std::vector<std::size_t> out;
  for (std::size_t q : queues) {
    if (waiting_[q] > 0) out.push_back(q);
  }
  return out;
}

std::size_t VictimOrder::chosen_leaf(std::size_t q) {
  if (memo_[q]) return *memo_[q];
  std::size_t leaf = q;
  const bool holds = leaves_[q] && leaves_[q]->next < leaves_[q]->members.size();  // a pod may name a parent queue
  if (!holds) {
    const std::vector<std::size_t> children = active_among(book_.tree().children(q));
    std::size_t best = children.front();
    for (std::size_t c : children) {
      if (c != best && gives_first(c, best)) best = c;
    }
    leaf = chosen_leaf(best);
  }
  memo_[q] = leaf;
  return leaf;
}

std::size_t VictimOrder::pop() {
  --left_;
  const std::vector<std::size_t> roots = active_among(book_.tree().roots());
  if (roots.empty()) return unknown_.members[unknown_.next++];
  std::fill(memo_.begin(), memo_.end(), std::nullopt);
  std::size_t best = roots.front();
  for (std::size_t r : roots) {
    if (r != best && gives_first(r, best)) best = r;
  }
  Leaf& leaf = *leaves_[chosen_leaf(best)];
  const std::size_t i = leaf.members[leaf.next++];
  leaf.given += candidates_[i].give_back;
  for (std::size_t up : book_.tree().path_to_root(*candidates_[i].queue)) --waiting_[up];
  return i;
}

}  // namespace fracpack::queues
