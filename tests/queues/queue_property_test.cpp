// Over random queue trees and workloads: no queue ever exceeds its limit, non-preemptible usage
// never exceeds deserved, and children's fair shares never add up to more than their parent's.
#include <doctest/doctest.h>

#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/session.hpp"
#include "support/builders.hpp"
#include "support/random_cluster.hpp"

namespace fracpack::test {
namespace {

using namespace fracpack::queues;

std::vector<QueueSpec> random_tree(RandomWorld& w) {
  std::vector<QueueSpec> out;
  const int roots = w.uniform(1, 3);
  std::vector<std::pair<std::string, int>> frontier;  // name, depth
  auto make = [&](const std::string& name, const std::string& parent) {
    QueueSpec q;
    q.name = name;
    q.parent = parent;
    q.priority = w.chance(0.3) ? 200 : 100;
    q.created = w.uniform(0, 1000);
    for (Resource r : kResources) {
      // Units sized to the random pods (0.1–8 CPUs, 1–64 GiB, up to 8 GPUs).
      const std::int64_t scale = r == Resource::kGpu ? 1000 : r == Resource::kCpu ? 4000 : (16LL << 30);
      QueueResource& res = q.resource(r);
      res.quota = w.uniform(0, 4) == 0 ? kUnlimited : w.uniform(0, 12) * scale / 2;
      const int lim = w.uniform(0, 19);  // mostly no limit, sometimes 0 (blocks), else above the quota
      res.limit = lim < 14 ? kUnlimited
                  : lim == 14 ? 0
                  : res.quota == kUnlimited ? w.uniform(1, 20) * scale
                                            : res.quota + w.uniform(0, 8) * scale;
      res.limit_set = true;
      res.over_quota_weight = w.uniform(0, 3) * 1000;
    }
    out.push_back(q);
  };
  for (int i = 0; i < roots; ++i) {
    make("r" + std::to_string(i), "");
    frontier.emplace_back("r" + std::to_string(i), 1);
  }
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    auto [name, depth] = frontier[i];
    if (depth >= 4) continue;
    const int kids = w.uniform(0, 3);
    for (int k = 0; k < kids; ++k) {
      const std::string child = name + "-" + std::to_string(k);
      make(child, name);
      frontier.emplace_back(child, depth + 1);
    }
  }
  return out;
}

TEST_CASE("queues: limits, deserved quotas and fair-share sums hold on random trees and workloads") {
  int placed_total = 0;
  int refused_total = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    RandomWorld w(seed * 104729u);
    auto tree = QueueTree::build(random_tree(w));
    REQUIRE(tree.is_ok());
    std::vector<std::size_t> leaves;
    for (std::size_t q = 0; q < tree->size(); ++q) {
      if (tree->is_leaf(q)) leaves.push_back(q);
    }
    auto created = ClusterState::create(w.nodes(w.uniform(2, 12)), PlacementConfig{});
    REQUIRE(created.is_ok());
    ClusterState state = std::move(*created);
    std::vector<Job> jobs;
    for (int i = 0; i < 150; ++i) {
      Job job;
      PodRequest pod = w.pod(fmt::format("p{}", i));
      job.queue = leaves[static_cast<std::size_t>(w.uniform(0, static_cast<int>(leaves.size()) - 1))];
      pod.queue = tree->queue(job.queue).name;
      pod.preemptible = w.chance(0.5);
      pod.priority = pod.preemptible ? 50 : 125;
      job.name = pod.key();
      job.priority = pod.priority;
      job.preemptible = pod.preemptible;
      job.min_member = 1;
      job.input_order = static_cast<std::size_t>(i);
      job.charge = charge_pending(pod, state);
      job.member_charges = {job.charge};
      job.members = {pod};
      jobs.push_back(std::move(job));
    }
    QueueBook book(*tree);
    std::vector<Amounts> requests(tree->size());
    for (const auto& job : jobs) requests[job.queue] += job.charge;
    const Amounts total = cluster_total(state);
    book.compute_fair_shares(total, requests);
    auto pack = policy("pack");
    for (const auto& o : run_session(state, book, *pack, jobs, total, {10})) {
      if (o.refusal) ++refused_total;
      for (const auto& m : o.members) placed_total += m.placement ? 1 : 0;
    }
    REQUIRE(state.check_invariants().empty());
    for (std::size_t q = 0; q < tree->size(); ++q) {
      const QueueSpec& spec = tree->queue(q);
      CAPTURE(spec.name);
      Amounts children_fair;
      for (std::size_t c : tree->children(q)) children_fair += book.fair_share(c);
      for (Resource r : kResources) {
        CAPTURE(resource_name(r));
        const QueueResource& term = spec.resource(r);
        if (term.limit != kUnlimited) CHECK(book.allocated(q)[r] <= term.limit);
        if (term.quota != kUnlimited) CHECK(book.allocated_non_preemptible(q)[r] <= term.quota);
        if (!tree->is_leaf(q)) CHECK(children_fair[r] <= book.fair_share(q)[r]);
        CHECK(book.allocated(q)[r] >= 0);
      }
    }
    Amounts roots_fair;
    for (std::size_t q : tree->roots()) roots_fair += book.fair_share(q);
    for (Resource r : kResources) CHECK(roots_fair[r] <= total[r]);
  }
  MESSAGE("placed ", placed_total, ", refused by queues ", refused_total);
  CHECK(placed_total > 500);
  CHECK(refused_total > 100);
}

}  // namespace
}  // namespace fracpack::test
