// Queue arithmetic at scale (the targets in docs/benchmarks.md): a full fair-share recomputation
// for 1,000 queues in 4 levels (≤ 5 ms) and an admission check, measured over 100,000 pending pods
// (≤ 2 µs each).
//
// Run: ./build/bench/queues_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <random>

#include <benchmark/benchmark.h>

#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {
namespace {

/// One organisation → 10 departments → 100 groups → teams, 4 levels deep: 1,001 queues (teams
/// stop at the 1,000th queue, so the last groups are leaves themselves).
QueueTree make_tree() {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<QueueSpec> queues;
  auto add = [&](std::string name, std::string parent, std::int64_t gpu_quota) {
    QueueSpec q;
    q.name = std::move(name);
    q.parent = std::move(parent);
    q.priority = pick(0, 3) == 0 ? 200 : 100;
    q.created = static_cast<std::int64_t>(queues.size());
    q.resource(Resource::kGpu) = {gpu_quota, pick(0, 4) == 0 ? gpu_quota * 2 : kUnlimited, 1000LL * pick(0, 3), true};
    q.resource(Resource::kCpu) = {gpu_quota * 16, kUnlimited, 1000, true};
    q.resource(Resource::kMemory) = {gpu_quota * (64LL << 20), kUnlimited, 1000, true};
    queues.push_back(q);
  };
  add("org", "", 4000 * 1000);
  int made = 1;
  for (int d = 0; d < 10; ++d) {
    const std::string dept = "d" + std::to_string(d);
    add(dept, "org", 400 * 1000);
    ++made;
    for (int g = 0; g < 10; ++g) {
      const std::string group = dept + "-g" + std::to_string(g);
      add(group, dept, 40 * 1000);
      ++made;
      for (int t = 0; t < 9 && made < 1000; ++t, ++made) add(group + "-t" + std::to_string(t), group, 4 * 1000);
    }
  }
  auto tree = QueueTree::build(std::move(queues));
  if (!tree) throw std::runtime_error(tree.status().message());
  return std::move(*tree);
}

std::vector<Amounts> random_requests(const QueueTree& tree) {
  std::mt19937 rng(11);
  std::vector<Amounts> requests(tree.size());
  for (std::size_t q = 0; q < tree.size(); ++q) {
    if (!tree.is_leaf(q)) continue;
    const std::int64_t gpus = std::uniform_int_distribution<std::int64_t>(0, 12)(rng) * 1000;
    requests[q] = Amounts(gpus, gpus * 16, gpus * (64LL << 20));
  }
  return requests;
}

void BM_FairShare1000Queues(benchmark::State& state) {
  const QueueTree tree = make_tree();
  QueueBook book(tree);
  const auto requests = random_requests(tree);
  const Amounts cluster(5000 * 1000, 5000 * 16000, 5000 * (64LL << 30));
  for (auto _ : state) book.compute_fair_shares(cluster, requests);
  state.counters["queues"] = static_cast<double>(tree.size());
}
BENCHMARK(BM_FairShare1000Queues)->Unit(benchmark::kMillisecond);

void BM_Admission100kPods(benchmark::State& state) {
  const QueueTree tree = make_tree();
  QueueBook book(tree);
  std::vector<std::size_t> leaves;
  for (std::size_t q = 0; q < tree.size(); ++q) {
    if (tree.is_leaf(q)) leaves.push_back(q);
  }
  std::mt19937 rng(13);
  struct Pending {
    std::size_t queue;
    Amounts charge;
    bool preemptible;
  };
  std::vector<Pending> pods(100'000);
  for (auto& p : pods) {
    p.queue = leaves[std::uniform_int_distribution<std::size_t>(0, leaves.size() - 1)(rng)];
    const std::int64_t hundredths = std::uniform_int_distribution<std::int64_t>(10, 100)(rng);
    p.charge = Amounts(hundredths * 10, 2000, 8LL << 30);
    p.preemptible = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  }
  std::int64_t admitted = 0;
  for (auto _ : state) {
    for (const auto& p : pods) {
      if (!book.admit(p.queue, p.charge, p.preemptible)) {
        ++admitted;
        book.charge(p.queue, p.charge, p.preemptible);
      }
    }
    state.PauseTiming();
    book = QueueBook(tree);  // reset usage for the next round
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pods.size()));
  state.counters["ns/admission"] = benchmark::Counter(static_cast<double>(state.iterations() * pods.size()),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["admitted_%"] = 100.0 * static_cast<double>(admitted) / static_cast<double>(state.iterations() * pods.size());
}
BENCHMARK(BM_Admission100kPods)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fracpack::queues

BENCHMARK_MAIN();
