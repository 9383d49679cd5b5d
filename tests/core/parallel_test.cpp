// parallel_for: every index once, on any thread count; a throwing body reaches the caller.
#include <atomic>
#include <chrono>
#include <thread>
#include <stdexcept>
#include <vector>

#include <doctest/doctest.h>

#include "core/parallel.hpp"

namespace fracpack::test {

TEST_CASE("parallel_for runs every index exactly once, for any thread count") {
  for (unsigned threads : {0u, 1u, 2u, 7u, 64u}) {
    std::vector<std::atomic<int>> hits(100);
    parallel_for(hits.size(), threads, [&](std::size_t i) { ++hits[i]; });
    for (const auto& h : hits) CHECK(h == 1);
  }
  int calls = 0;
  parallel_for(0, 4, [&](std::size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("an exception in a worker reaches the caller, and no new index starts after it") {
  std::atomic<int> started{0};
  bool caught = false;
  try {
    parallel_for(1000, 4, [&](std::size_t i) {
      ++started;
      if (i == 3) throw std::runtime_error("candidate 3 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // 1,000 indices would take 250 ms
    });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "candidate 3 failed";
  }
  CHECK(caught);
  CHECK(started < 1000);  // the rest were never started
}

}  // namespace fracpack::test
