// The fair-share division (KAI resource_division.go), and the worked example of docs/fair-share.md.
#include "fracpack/queues/fair_share.hpp"

#include <doctest/doctest.h>

#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/queue_tree.hpp"

namespace fracpack::queues {
namespace {

constexpr std::int64_t kGpu = 1000;  // milli-GPU per GPU

ShareTerms terms(std::string_view name, std::int64_t quota, std::int64_t weight, std::int64_t request,
                 std::int64_t limit = kUnlimited, std::int32_t priority = 100) {
  ShareTerms t;
  t.name = name;  // the tests' names are literals
  t.deserved = quota;
  t.weight = weight;
  t.request = request;
  t.limit = limit;
  t.priority = priority;
  return t;
}

TEST_CASE("deserved first, capped by request and limit") {
  auto shares = divide(10 * kGpu, {terms("a", 4 * kGpu, 0, 2 * kGpu), terms("b", 4 * kGpu, 0, 9 * kGpu, 3 * kGpu)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{2 * kGpu, 3 * kGpu});
}

TEST_CASE("quota -1 deserves everything it asks for") {
  auto shares = divide(10 * kGpu, {terms("a", kUnlimited, 0, 7 * kGpu), terms("b", 0, 1000, 9 * kGpu)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{7 * kGpu, 3 * kGpu});
}

TEST_CASE("over-quota in proportion to weight; weight 0 gets nothing over quota") {
  auto shares = divide(9 * kGpu,
                       {terms("a", 0, 1000, 9 * kGpu), terms("b", 0, 2000, 9 * kGpu), terms("c", 1 * kGpu, 0, 9 * kGpu)},
                       kGpu);
  CHECK(shares == std::vector<std::int64_t>{3 * kGpu - 0, 5 * kGpu, 1 * kGpu});  // 8 left: 2.67 → 2 (+1), 5.33 → 5
}

TEST_CASE("a queue that wants less than its offer frees the rest for another round") {
  auto shares = divide(10 * kGpu, {terms("a", 0, 1000, 1 * kGpu), terms("b", 0, 1000, 20 * kGpu)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{1 * kGpu, 9 * kGpu});
}

TEST_CASE("higher priority bands are served first") {
  auto shares = divide(10 * kGpu,
                       {terms("low", 0, 1000, 10 * kGpu, kUnlimited, 50), terms("high", 0, 1000, 7 * kGpu, kUnlimited, 200)},
                       kGpu);
  CHECK(shares == std::vector<std::int64_t>{3 * kGpu, 7 * kGpu});
}

TEST_CASE("over-quota rounds give whole GPUs; rounded-away GPUs go to the largest leftover, then the oldest") {
  // 4 GPUs left, three equal queues: 4/3 each → 1 each, and the leftover GPU to the oldest (name order here).
  auto shares = divide(4 * kGpu, {terms("c", 0, 1000, 3 * kGpu), terms("a", 0, 1000, 3 * kGpu), terms("b", 0, 1000, 3 * kGpu)},
                       kGpu);
  CHECK(shares == std::vector<std::int64_t>{1 * kGpu, 2 * kGpu, 1 * kGpu});
}

TEST_CASE("a limit caps the over-quota share too; limit 0 blocks") {
  auto shares = divide(10 * kGpu, {terms("a", 0, 1000, 9 * kGpu, 2 * kGpu), terms("b", 0, 1000, 9 * kGpu, 0)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{2 * kGpu, 0});
}

TEST_CASE("fractional remainders never push a queue past what it asks for") {
  auto shares = divide(3 * kGpu, {terms("a", 0, 1000, 1500), terms("b", 0, 1000, 1500)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{1500, 1500});
  auto tight = divide(2 * kGpu, {terms("a", 0, 1000, 1500), terms("b", 0, 1000, 1500)}, kGpu);
  CHECK(tight[0] + tight[1] == 2 * kGpu);
  CHECK(tight[0] <= 1500);
  CHECK(tight[1] <= 1500);
}

TEST_CASE("deserved claims above the total are scaled down together, never past the total") {
  // Two children deserve 4 and 2 GPUs of a parent whose share is 3: they get 2 and 1.
  auto shares = divide(3 * kGpu, {terms("a", 4 * kGpu, 1000, 9 * kGpu), terms("b", 2 * kGpu, 1000, 9 * kGpu)}, kGpu);
  CHECK(shares == std::vector<std::int64_t>{2 * kGpu, 1 * kGpu});
  auto odd = divide(1000, {terms("a", 1000, 0, 1000), terms("b", 1000, 0, 1000), terms("c", 1000, 0, 1000)}, kGpu);
  CHECK(odd[0] + odd[1] + odd[2] == 1000);
}

// docs/fair-share.md, "A worked example": the numbers there are these.
TEST_CASE("worked example: two departments, three teams, 10 GPUs") {
  auto queue = [](std::string name, std::string parent, double quota, double weight, std::int64_t created) {
    QueueSpec q;
    q.name = std::move(name);
    q.parent = std::move(parent);
    q.created = created;
    for (Resource r : kResources) {
      q.resource(r).limit = kUnlimited;
      q.resource(r).quota = r == Resource::kGpu ? static_cast<std::int64_t>(quota * 1000) : kUnlimited;
      q.resource(r).over_quota_weight = static_cast<std::int64_t>(weight * 1000);
    }
    return q;
  };
  auto tree = QueueTree::build({queue("research", "", 6, 1, 1), queue("prod", "", 4, 1, 2),
                                queue("team-a", "research", 2, 1, 3), queue("team-b", "research", 2, 2, 4),
                                queue("team-c", "research", 0, 1, 5), queue("inference", "prod", 4, 1, 6)});
  REQUIRE(tree.is_ok());
  QueueBook book(*tree);
  std::vector<Amounts> requests(tree->size());
  auto want = [&](const char* name, std::int64_t gpus) { requests[*tree->find(name)] = Amounts(gpus * kGpu, 0, 0); };
  want("team-a", 5);
  want("team-b", 4);
  want("team-c", 1);
  want("inference", 2);
  book.compute_fair_shares(Amounts(10 * kGpu, 0, 0), requests);
  auto fair = [&](const char* name) { return book.fair_share(*tree->find(name))[Resource::kGpu] / kGpu; };
  CHECK(fair("research") == 8);  // deserved 6, plus the 2 prod does not ask for
  CHECK(fair("prod") == 2);      // asks for 2 of its deserved 4
  CHECK(fair("inference") == 2);
  CHECK(fair("team-a") == 3);    // deserved 2, then 1 of the 4 left over (weight 1 of 4)
  CHECK(fair("team-b") == 4);    // deserved 2, then 2 (weight 2 of 4): satisfied
  CHECK(fair("team-c") == 1);    // deserved 0, then 1 (weight 1 of 4): satisfied
}

}  // namespace
}  // namespace fracpack::queues
