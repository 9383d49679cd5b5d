// Reserve and release: atomic, idempotent, and safe under concurrency (KAI #2153, Volcano #3616).
#include <atomic>
#include <latch>
#include <thread>

#include <doctest/doctest.h>

#include "support/builders.hpp"

namespace fracpack::test {
namespace {

GpuChoice gpus(std::vector<int> g) {
  GpuChoice c;
  c.gpus = std::move(g);
  return c;
}

TEST_CASE("reserve re-checks the rules and changes nothing when it refuses") {
  ClusterState s = cluster({nvf("n", 2, 10000)});
  PodRequest sm = PodBuilder("sm").gpu_memory("1000Mi").sm_sharing().spec();
  PodRequest ts = PodBuilder("ts").gpu_memory("1000Mi").spec();
  REQUIRE(s.reserve(ts, 0, gpus({0})).is_ok());
  auto before = usage_of(s);
  Status mixed = s.reserve(sm, 0, gpus({0}));
  CHECK(mixed.code() == Code::kUnschedulable);
  CHECK(mixed.message() == "pod default/sm on node n: GPU 0 cannot take it (shared-time-slicing, 1000 of 10000 MiB usable held)");
  CHECK(usage_of(s) == before);
  CHECK(s.allocation("default/sm") == nullptr);
  CHECK(s.reserve(sm, 0, gpus({7})).code() == Code::kNotFound);
  CHECK(s.reserve(PodBuilder("two").gpu_memory("1000Mi").devices(2).spec(), 0, gpus({1, 1})).code() ==
        Code::kInvalidArgument);
  CHECK(s.reserve(PodBuilder("two").gpu_memory("1000Mi").devices(2).spec(), 0, gpus({1})).code() ==
        Code::kInvalidArgument);
  CHECK(usage_of(s) == before);
  CHECK(s.check_invariants().empty());
}

TEST_CASE("reserve is idempotent; a second, different placement is refused") {
  ClusterState s = cluster({nvf("n", 2, 10000)});
  PodRequest p = PodBuilder("p").gpu_memory("1000Mi").spec();
  REQUIRE(s.reserve(p, 0, gpus({1})).is_ok());
  auto after = usage_of(s);
  CHECK(s.reserve(p, 0, gpus({1})).is_ok());
  CHECK(usage_of(s) == after);
  Status other = s.reserve(p, 0, gpus({0}));
  CHECK(other.code() == Code::kAlreadyExists);
  CHECK(other.message() == "pod default/p is already placed on node n (GPUs 1)");
  CHECK(usage_of(s) == after);
}

TEST_CASE("release restores the exact prior state and is idempotent") {
  ClusterState s = cluster({nvf("n", 2, 10000)});
  REQUIRE(place(s, PodBuilder("a").gpu_memory("3000Mi").spec()).placement);
  auto before = usage_of(s);
  REQUIRE(place(s, PodBuilder("b").gpu_memory("3000Mi").spec()).placement);
  REQUIRE(place(s, PodBuilder("c").whole(1).spec()).placement);
  CHECK(s.release("default/c"));
  CHECK(s.release("default/b"));
  CHECK(usage_of(s) == before);
  CHECK_FALSE(s.release("default/b"));
  CHECK_FALSE(s.release("default/never"));
  CHECK(usage_of(s) == before);
  CHECK(s.check_invariants().empty());
}

TEST_CASE("KAI #2153: 16 × 0.5 submitted at once on 8 GPUs never put 3 on one card") {
  for (int round = 0; round < 20; ++round) {
    Ledger ledger(cluster({nvf("n", 8, 80000)}));
    auto pack = policy("pack");
    std::atomic<int> placed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        if (ledger.place(PodBuilder("half-" + std::to_string(t)).fraction("0.5").spec(), *pack).placement) ++placed;
      });
    }
    for (auto& t : threads) t.join();
    CHECK(placed == 16);
    ledger.read([](const ClusterState& s) {
      CHECK(s.check_invariants().empty());
      for (const auto& gpu : s.usage(0).gpus) CHECK(gpu.holders.size() == 2);
      return 0;
    });
  }
}

TEST_CASE("Volcano #3616: stale decisions racing to reserve cannot overcommit a 24 GiB card") {
  // The classic Filter/Bind race, forced: all three threads decide (read lock) before any of them
  // reserves, so every round has two decisions of the last room and one must lose. The ledger's
  // re-check refuses the loser and changes nothing.
  for (int round = 0; round < 20; ++round) {
    Ledger ledger(cluster({nvf("n", 1, 24600)}));  // 24 GiB fits two 12 GiB pods, not three
    auto pack = policy("pack");
    std::atomic<int> ok{0};
    std::atomic<int> refused{0};
    std::latch decided(3);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        PodRequest p = PodBuilder("p" + std::to_string(t)).gpu_memory("12Gi").spec();
        auto decision = ledger.read([&](const ClusterState& s) { return select(s, p, *pack); });
        decided.arrive_and_wait();  // nobody reserves until every thread holds a decision
        CHECK(decision.has_value());  // two pods fit, so every fresh decision finds room
        if (!decision) return;
        Status st = ledger.reserve(p, "n", decision->choice.gpus);
        if (st.is_ok()) {
          ++ok;
        } else {
          CHECK(st.code() == Code::kUnschedulable);
          ++refused;
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(ok == 2);
    CHECK(refused == 1);
    ledger.read([](const ClusterState& s) {
      CHECK(s.usage(0).gpus[0].used == MiB(24576));
      CHECK(s.usage(0).gpus[0].holders.size() == 2);
      CHECK(s.check_invariants().empty());
      return 0;
    });
  }
}

TEST_CASE("many threads placing and releasing keep every invariant") {
  Ledger ledger(cluster({nvf("a", 4, 16000), nvf("b", 4, 16000)}));
  auto pack = policy("pack");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string name = fmt::format("t{}-{}", t, i);
        PodBuilder b(name);
        if (i % 3 == 0) b.sm_sharing();
        b.gpu_memory(fmt::format("{}Mi", 1000 + 500 * (i % 7)));
        PodRequest p = b.spec();
        if (ledger.place(p, *pack).placement && i % 2 == 0) ledger.release(p.key());
      }
    });
  }
  for (auto& t : threads) t.join();
  ledger.read([](const ClusterState& s) {
    CHECK(s.check_invariants().empty());
    return 0;
  });
}

}  // namespace
}  // namespace fracpack::test
