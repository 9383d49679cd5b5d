// parallel_for: body(0) … body(count − 1) on up to `threads` threads (the caller's among them),
// each index exactly once. The first exception a body throws stops the indices not yet started
// and is rethrown to the caller after every thread has joined, so an error never terminates the
// process from a worker. Used by the offline runs (bench density's grid, quota tune's candidates),
// whose bodies write only their own result slot: the results are the same for any thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fracpack {

template <class Body>
void parallel_for(std::size_t count, unsigned threads, Body&& body) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
        next = count;  // no new index starts
      }
    }
  };
  const auto wanted = static_cast<std::size_t>(std::max(1u, threads));
  const std::size_t extra = std::min(wanted, std::max<std::size_t>(count, 1)) - 1;
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 0; t < extra; ++t) pool.emplace_back(work);
    work();
  }  // joins
  if (first) std::rethrow_exception(first);
}

}  // namespace fracpack
