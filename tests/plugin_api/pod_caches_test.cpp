// The caches keyed by pod hold a byte budget, not a count: large distinct pods (a 7 MB integer
// array inside each) grew the server by ~57 MB a request with no plateau.
#include <doctest/doctest.h>

#include "fracpack/binpack/verdict_cache.hpp"
#include "plugin_api/pod_cache.hpp"
#include "plugin_api/seen_pods.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

/// A distinct pod `i` carrying `numbers` integers (~7 characters each) in an annotation-free field.
json large_pod(int i, std::size_t numbers) {
  json pod = PodBuilder(fmt::format("big-{}", i)).gpu_memory("1Gi").obj;
  json data = json::array();
  for (std::size_t k = 0; k < numbers; ++k) data.push_back(1'000'000 + static_cast<int>(k) + i);
  pod["spec"]["data"] = std::move(data);
  return pod;
}

}  // namespace

TEST_CASE("the parsed-pod cache stays within its byte budget however many large pods come") {
  // The front's cache is a default one (64 MiB); the same bound at a quarter of that, fed pods a
  // quarter the size, takes a quarter of the parsing (minutes under the sanitizers otherwise).
  static_assert(api::PodCache::kDefaultBytes == std::size_t{64} << 20);
  constexpr std::size_t kBudget = api::PodCache::kDefaultBytes / 4;
  api::PodCache cache(kBudget);
  std::size_t fed = 0;
  std::size_t most = 0;
  std::shared_ptr<const json> first;
  for (int i = 0; i < 30; ++i) {
    const std::string bytes = large_pod(i, 75'000).dump();  // 0.6 MB of text, ~1.8 MB counted
    auto parsed = cache.parse(bytes, "pod");
    REQUIRE(parsed.is_ok());
    if (i == 0) first = *parsed;
    fed += bytes.size() + api::approx_bytes(**parsed);
    CHECK((*parsed)->at("spec").at("data").size() == 75'000);
    most = std::max(most, cache.bytes());
    CHECK(cache.bytes() <= kBudget);
  }
  CHECK(fed > 2 * kBudget);      // the test fed far more than the budget
  CHECK(most > kBudget / 2);     // and the cache did hold pods up to it
  CHECK(cache.size() < 30);
  // The latest pod is still a hit; the first one was evicted.
  const std::string last = large_pod(29, 75'000).dump();
  CHECK(cache.parse(last, "pod")->get() == cache.parse(last, "pod")->get());
  CHECK(cache.parse(large_pod(0, 75'000).dump(), "pod")->get() != first.get());  // parsed afresh
}

TEST_CASE("the parsed-pod cache keeps ordinary pods, and does not keep one larger than its budget") {
  api::PodCache cache(1 << 20);
  const std::string small = PodBuilder("small").obj.dump();
  auto first = cache.parse(small, "pod");
  CHECK(cache.parse(small, "pod")->get() == first->get());  // a hit: the same parsed object
  const std::string huge = large_pod(0, 200'000).dump();
  auto parsed = cache.parse(huge, "pod");
  REQUIRE(parsed.is_ok());
  CHECK(cache.size() == 1);  // parsed, answered, not kept
  CHECK(cache.bytes() < (1 << 20));
  CHECK(!cache.parse("{\"metadata\": ", "pod").is_ok());  // bad bytes are never kept
  CHECK(cache.size() == 1);
}

TEST_CASE("the pods kept for Bind stay within their byte budget however many large pods come") {
  constexpr std::size_t kBudget = std::size_t{16} << 20;
  api::SeenPods seen(100'000, kBudget);
  std::size_t dropped = 0;
  for (int i = 0; i < 20; ++i) {
    const json pod = large_pod(i, 100'000);
    auto request = k8s::decode_pod(pod, DecodeConfig{}, PriorityClasses{});
    REQUIRE(request.is_ok());
    dropped += seen.remember(*request, pod).size();
    CHECK(seen.bytes() <= kBudget);
  }
  CHECK(dropped > 0);
  CHECK(seen.size() + dropped == 20);
  CHECK(seen.find("default/big-19").has_value());  // the newest stay
  CHECK(!seen.find("default/big-0").has_value());  // the oldest went
}

TEST_CASE("the verdict cache stays within its byte budget when pod shapes carry megabyte selectors") {
  constexpr std::size_t kBudget = std::size_t{8} << 20;
  VerdictCache verdicts(128, kBudget);
  ClusterState state = cluster({nvf("a", 1, 24000)});
  auto pack = policy("pack");
  for (int i = 0; i < 40; ++i) {
    const PodRequest pod = PodBuilder(fmt::format("p{}", i)).selector("zone", std::string(512 << 10, 'a' + static_cast<char>(i % 26)) +
                                                                       std::to_string(i)).spec();
    std::size_t visited = 0;
    verdicts.visit(state, pod, *pack, {0}, [&](std::size_t, const VerdictCache::Entry&) { ++visited; });
    CHECK(visited == 1);
    CHECK(verdicts.bytes() <= kBudget);
  }
  CHECK(verdicts.bytes() > kBudget / 2);  // it held shapes up to the budget, not one
}

}  // namespace fracpack::test
