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

/// A one-pod job of leaf `leaf`: preemptible at priority 50, else 125.
Job one_pod_job(PodRequest pod, const QueueTree& tree, std::size_t leaf, bool preemptible, int order, const ClusterState& state) {
  Job job;
  job.queue = leaf;
  pod.queue = tree.queue(leaf).name;
  pod.preemptible = preemptible;
  pod.priority = preemptible ? 50 : 125;
  job.name = pod.key();
  job.priority = pod.priority;
  job.preemptible = pod.preemptible;
  job.min_member = 1;
  job.input_order = static_cast<std::size_t>(order);
  job.charge = charge_pending(pod, state);
  job.member_charges = {job.charge};
  job.members = {pod};
  return job;
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
      const std::size_t leaf = leaves[static_cast<std::size_t>(w.uniform(0, static_cast<int>(leaves.size()) - 1))];
      jobs.push_back(one_pod_job(w.pod(fmt::format("p{}", i)), *tree, leaf, w.chance(0.5), i, state));
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

TEST_CASE("a session over runs of alike pods has the outcomes of every turn taken") {
  // run_session over AlikeRuns ends a run at its first pod FailedPods covers when admission
  // cannot refuse the rest. The same jobs one by one take every turn; the outcomes, in order, and
  // the ledgers and books must be the same. Random trees: the leaf's ancestors carry limits and
  // quotas too, except on odd seeds; every fourth seed spreads the jobs over two leaves (every job
  // takes its turn).
  int could_end = 0;  // seeds whose preemptible runs may end early
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    RandomWorld w(seed * 7919u);
    std::vector<QueueSpec> specs = random_tree(w);
    if (seed % 2 == 1) {  // no limits (and for every third such seed no quotas): admission never refuses
      for (QueueSpec& q : specs) {
        for (Resource r : kResources) {
          q.resource(r).limit = kUnlimited;
          if (seed % 3 == 0) q.resource(r).quota = kUnlimited;
        }
      }
    }
    auto tree = QueueTree::build(specs);
    REQUIRE(tree.is_ok());
    std::vector<std::size_t> leaves;
    for (std::size_t q = 0; q < tree->size(); ++q) {
      if (tree->is_leaf(q)) leaves.push_back(q);
    }
    const bool two_leaves = seed % 4 == 0 && leaves.size() > 1;
    ClusterState first = w.cluster(w.uniform(2, 8));
    std::vector<PodRequest> shapes;
    for (int k = 0; k < 6; ++k) shapes.push_back(w.pod("shape"));
    std::vector<Job> jobs;
    for (int i = 0; i < 200; ++i) {
      const int k = w.uniform(0, 5);
      PodRequest pod = shapes[static_cast<std::size_t>(k)];
      pod.name = fmt::format("p{}", i);
      const bool preemptible = w.chance(0.7);
      const std::size_t leaf = two_leaves && w.chance(0.5) ? leaves[1] : leaves[0];
      Job job = one_pod_job(pod, *tree, leaf, preemptible, i, first);
      job.created = w.uniform(0, 3);  // ties broken by input order
      job.ask = FailedPods::ask_of(job.members.front());
      job.ask.alike = (leaf == leaves[0] ? 0 : 12) + static_cast<std::size_t>(k) * 2 + (preemptible ? 1 : 0);
      jobs.push_back(std::move(job));
    }
    AlikeRuns runs(24);
    for (const Job& job : jobs) runs[job.ask.alike].push_back(&job);
    std::erase_if(runs, [](const auto& run) { return run.empty(); });
    for (auto& run : runs) {  // job order: creation, then input order (one priority per class)
      std::stable_sort(run.begin(), run.end(), [](const Job* x, const Job* y) { return x->created < y->created; });
    }
    ClusterState second = first;
    QueueBook book_a(*tree);
    QueueBook book_b(*tree);
    std::vector<Amounts> requests(tree->size());
    for (const auto& job : jobs) requests[job.queue] += job.charge;
    const Amounts total = cluster_total(first);
    book_a.compute_fair_shares(total, requests);
    book_b.compute_fair_shares(total, requests);
    could_end += book_a.never_refuses(leaves[0], true) ? 1 : 0;
    SessionOptions options;
    options.explain = false;
    auto pack = policy("pack");
    const auto a = run_session(first, book_a, *pack, runs, total, options);
    const auto b = run_session(second, book_b, *pack, jobs, total, options);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(a[i].job->name == b[i].job->name);
      CHECK(a[i].refusal.has_value() == b[i].refusal.has_value());
      REQUIRE(a[i].members.size() == b[i].members.size());
      for (std::size_t m = 0; m < a[i].members.size(); ++m) {
        const auto& pa = a[i].members[m].placement;
        const auto& pb = b[i].members[m].placement;
        REQUIRE(pa.has_value() == pb.has_value());
        if (pa) CHECK(pa->node == pb->node);
      }
    }
    CHECK(first.allocation_count() == second.allocation_count());
    for (const Job& job : jobs) {
      const Allocation* x = first.allocation(job.name);
      const Allocation* y = second.allocation(job.name);
      REQUIRE((x == nullptr) == (y == nullptr));
      if (x != nullptr) CHECK((x->node == y->node && x->choice.gpus == y->choice.gpus && x->choice.memory == y->choice.memory));
    }
    for (std::size_t q = 0; q < tree->size(); ++q) CHECK(book_a.allocated(q) == book_b.allocated(q));
  }
  CHECK(could_end >= 10);  // the early end was in play, not only the every-turn fallback
}

}  // namespace
}  // namespace fracpack::test
