#include "fracpack/queues/queue_book.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace fracpack::queues {
namespace {

/// Over-quota rounds give whole GPUs ("round numbers" in KAI); CPU and memory go by their unit.
std::int64_t round_unit(Resource r) { return r == Resource::kGpu ? 1000 : 1; }

std::string unit_word(Resource r, std::int64_t amount) {
  switch (r) {
    case Resource::kGpu: return amount == 1000 ? "GPU" : "GPUs";
    case Resource::kCpu: return "millicores of CPU";
    case Resource::kMemory: return "MB of memory";
  }
  return "";
}

std::string over_limit_message(const QueueSpec& q, Resource r, std::int64_t allocated, std::int64_t request) {
  const QueueResource& term = q.resource(r);
  const std::string limit_text = term.limit_set ? format_amount(r, term.limit) : "unset (0 in KAI, which blocks it)";
  return fmt::format(
      "queue {}: {} would reach {} {} (allocated {} + requested {}), above its limit {}; raise {}.limit of queue {} "
      "to ≥ {}, or -1 for no limit",
      q.name, resource_name(r), format_amount(r, allocated + request), unit_word(r, allocated + request), format_amount(r, allocated),
      format_amount(r, request), limit_text, resource_name(r), q.name, format_amount(r, allocated + request));
}

std::string over_quota_message(const QueueSpec& q, Resource r, std::int64_t held, std::int64_t request) {
  const QueueResource& term = q.resource(r);
  std::string fresh;
  if (q.name == "default-queue" && term.quota == 0) {
    fresh = " (a fresh KAI install gives default-queue zero quota: pods stay Pending until it is set)";
  }
  return fmt::format(
      "queue {}: non-preemptible jobs would hold {} {} (allocated non-preemptible {} + requested {}), above its "
      "deserved {}{}; raise {}.quota of queue {} to ≥ {}, or make the job preemptible (label "
      "kai.scheduler/preemptibility: preemptible, or a priority below 100)",
      q.name, format_amount(r, held + request), unit_word(r, held + request), format_amount(r, held),
      format_amount(r, request), format_amount(r, term.quota), fresh, resource_name(r), q.name,
      format_amount(r, held + request));
}

}  // namespace

QueueBook::QueueBook(const QueueTree& tree)
    : tree_(&tree),
      parent_(tree.size()),
      allocated_(tree.size()),
      non_preemptible_(tree.size()),
      fair_share_(tree.size()) {
  for (std::size_t q = 0; q < tree.size(); ++q) parent_[q] = tree.parent(q);
}

Amounts QueueBook::deserved(std::size_t q) const {
  Amounts out;
  for (Resource r : kResources) out[r] = tree_->queue(q).resource(r).quota;
  return out;
}

void QueueBook::charge(std::size_t q, const Amounts& amount, bool preemptible, int sign) {
  for (std::optional<std::size_t> at = q; at; at = parent_[*at]) {
    for (Resource r : kResources) {
      allocated_[*at][r] += sign * amount[r];
      if (!preemptible) non_preemptible_[*at][r] += sign * amount[r];
    }
  }
}

void QueueBook::compute_fair_shares(const Amounts& total, const std::vector<Amounts>& leaf_requests) {
  total_ = total;
  const std::size_t n = tree_->size();
  // Requests bottom-up: a parent asks for what its subtree asks for.
  std::vector<Amounts> request(n);
  const auto& order = tree_->top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t q = *it;
    if (tree_->is_leaf(q)) request[q] = leaf_requests[q];
    if (auto p = parent_[q]) request[*p] += request[q];
  }
  auto divide_among = [&](const std::vector<std::size_t>& group, const Amounts& amount) {
    for (Resource r : kResources) {
      std::vector<ShareTerms> terms;
      terms.reserve(group.size());
      for (std::size_t q : group) {
        const QueueSpec& spec = tree_->queue(q);
        const QueueResource& res = spec.resource(r);
        terms.push_back({res.quota, res.limit, res.over_quota_weight, request[q][r], spec.priority, spec.created, spec.name});
      }
      const std::vector<std::int64_t> shares = divide(amount[r], terms, round_unit(r));
      for (std::size_t i = 0; i < group.size(); ++i) fair_share_[group[i]][r] = shares[i];
    }
  };
  divide_among(tree_->roots(), total);
  for (std::size_t q : order) {
    if (!tree_->is_leaf(q)) divide_among(tree_->children(q), fair_share_[q]);
  }
}

std::optional<QueueBook::Exceeded> QueueBook::first_exceeded(std::size_t q, const Amounts& request, bool preemptible) const {
  for (std::optional<std::size_t> at = q; at; at = parent_[*at]) {
    const QueueSpec& spec = tree_->queue(*at);
    for (Resource r : kResources) {
      const QueueResource& term = spec.resource(r);
      if (request[r] > 0 && term.limit != kUnlimited && allocated_[*at][r] + request[r] > term.limit) return Exceeded{*at, r, true};
    }
  }
  if (preemptible || non_preemptible_fits(q, request)) return std::nullopt;
  for (std::optional<std::size_t> at = q; at; at = parent_[*at]) {  // name where
    for (Resource r : kResources) {
      const std::int64_t quota = tree_->queue(*at).resource(r).quota;
      if (request[r] > 0 && quota != kUnlimited && non_preemptible_[*at][r] + request[r] > quota) return Exceeded{*at, r, false};
    }
  }
  return std::nullopt;
}

bool QueueBook::never_refuses(std::size_t q, bool preemptible) const {
  for (std::optional<std::size_t> at = q; at; at = parent_[*at]) {
    for (Resource r : kResources) {
      const QueueResource& term = tree_->queue(*at).resource(r);
      if (term.limit != kUnlimited || (!preemptible && term.quota != kUnlimited)) return false;
    }
  }
  return true;
}

bool QueueBook::non_preemptible_fits(std::size_t q, const Amounts& request) const {
  for (std::optional<std::size_t> at = q; at; at = parent_[*at]) {
    for (Resource r : kResources) {
      const std::int64_t quota = tree_->queue(*at).resource(r).quota;
      if (request[r] > 0 && quota != kUnlimited && non_preemptible_[*at][r] + request[r] > quota) return false;
    }
  }
  return true;
}

std::optional<Refusal> QueueBook::admit(std::size_t q, const Amounts& request, bool preemptible) const {
  const auto e = first_exceeded(q, request, preemptible);
  if (!e) return std::nullopt;
  const QueueSpec& spec = tree_->queue(e->queue);
  if (e->limit) {
    return Refusal{"OverLimit", spec.name,
                   refusal_messages_ ? over_limit_message(spec, e->resource, allocated_[e->queue][e->resource], request[e->resource])
                                     : std::string()};
  }
  return Refusal{"NonPreemptibleOverQuota", spec.name,
                 refusal_messages_ ? over_quota_message(spec, e->resource, non_preemptible_[e->queue][e->resource], request[e->resource])
                                   : std::string()};
}

void QueueBook::set_figures(std::size_t q, const Amounts& allocated, const Amounts& non_preemptible, const Amounts& fair_share) {
  allocated_[q] = allocated;
  non_preemptible_[q] = non_preemptible;
  fair_share_[q] = fair_share;
}

bool QueueBook::over_fair_share(std::size_t q) const {
  for (Resource r : kResources) {
    if (fair_share_[q][r] >= allocated_[q][r]) return false;
  }
  return true;
}

bool QueueBook::within_fair_share(std::size_t q, const Amounts& extra) const {
  for (Resource r : kResources) {
    if (allocated_[q][r] + extra[r] > fair_share_[q][r]) return false;
  }
  return true;
}

bool QueueBook::within_quota(std::size_t q, const Amounts& extra) const {
  for (Resource r : kResources) {
    const std::int64_t quota = tree_->queue(q).resource(r).quota;
    if (quota != kUnlimited && allocated_[q][r] + extra[r] > quota) return false;
  }
  return true;
}

std::int64_t QueueBook::allocatable(std::size_t q, Resource r) const {
  const QueueResource& term = tree_->queue(q).resource(r);
  if (term.quota == kUnlimited) return term.limit;
  const std::int64_t share = std::max(term.quota, fair_share_[q][r]);
  return term.limit == kUnlimited ? share : std::min(share, term.limit);
}

}  // namespace fracpack::queues
