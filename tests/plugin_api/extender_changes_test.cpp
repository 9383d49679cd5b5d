// Changes to the extender's cluster (Apply, Remove, Sync) are validated whole before anything is
// touched: a refused change leaves the ledger in memory and the state file exactly as they were,
// and the server restarts on that file.
#include <filesystem>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

std::unique_ptr<Extender> open_at(const std::string& path) {
  ExtenderOptions options;
  options.state_path = path;
  auto core = Extender::open(options);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  return std::move(*core);
}

/// A cluster of two 2-GPU nodes, queues root → {qa, qb}, and four bound pods holding GPUs.
std::unique_ptr<Extender> populated(const std::string& path) {
  auto core = open_at(path);
  REQUIRE(core->apply({nvf("a", 2, 80000).obj, nvf("b", 2, 80000).obj, queue_object("root", "", -1),
                       queue_object("qa", "root", 1), queue_object("qb", "root", 1)},
                      nullptr)
              .is_ok());
  std::vector<json> bound;
  for (int i = 0; i < 4; ++i) {
    bound.push_back(PodBuilder(fmt::format("p{}", i))
                        .uid(fmt::format("u{}", i))
                        .whole(1)
                        .label("kai.scheduler/queue", i % 2 == 0 ? "qa" : "qb")
                        .annotation("nvidia.com/container.main.gpus.devices", std::to_string(i % 2))
                        .bound_to(i < 2 ? "a" : "b")
                        .obj);
  }
  std::vector<std::string> conflicts;
  REQUIRE(core->sync(bound, false, &conflicts).is_ok());
  REQUIRE_MESSAGE(conflicts.empty(), conflicts.front());
  REQUIRE(core->snapshot().bindings.size() == 4);
  return core;
}

/// Applies `refused` and checks it is refused with `code`, that memory did not move, that no
/// pod can now be bound onto a held GPU, and that the state file reopens to the same ledger.
void check_refused(const std::function<Status(Extender&)>& refused, Code code, const std::string& message_part) {
  StateFile file("changes");
  json before;
  {
    auto core = populated(file.path);
    before = to_json(core->snapshot());
    Status st = refused(*core);
    CHECK(st.code() == code);
    CHECK_MESSAGE(st.message().find(message_part) != std::string::npos, st.message());
    CHECK(to_json(core->snapshot()) == before);
    // Every GPU is held: a new whole-GPU pod fits nowhere.
    json next = PodBuilder("next").whole(1).label("kai.scheduler/queue", "qa").obj;
    auto f = core->filter(next, {"a", "b"});
    REQUIRE(f.is_ok());
    CHECK(f->passed.empty());
  }
  auto reopened = open_at(file.path);  // the server restarts on the file: nothing of the change is there
  CHECK(to_json(reopened->snapshot()) == before);
}

TEST_CASE("an Apply of a Queue whose parentQueue does not exist changes nothing, in memory or on disk") {
  check_refused([](Extender& core) { return core.apply({queue_object("orphan", "nowhere", 1)}, nullptr); }, Code::kInvalidArgument,
                "nowhere");
}

TEST_CASE("an Apply that makes a parentQueue cycle changes nothing") {
  check_refused(
      [](Extender& core) { return core.apply({queue_object("x", "y", 1), queue_object("y", "x", 1)}, nullptr); },
      Code::kInvalidArgument, "cycle");
}

TEST_CASE("an Apply whose last object is bad applies none of the good ones before it") {
  check_refused(
      [](Extender& core) {
        json bad = nvf("c", 1, 80000).obj;
        bad["metadata"].erase("name");
        return core.apply({nvf("d", 4, 80000).obj, queue_object("qc", "root", 1), bad}, nullptr);
      },
      Code::kInvalidArgument, "objects[2]");
}

TEST_CASE("removing a Queue that is another queue's parent is refused and changes nothing") {
  check_refused([](Extender& core) { return core.remove("Queue", "root"); }, Code::kInvalidArgument,
                "Queue root: it is the parentQueue of queue qa");
}

TEST_CASE("an empty Sync is refused unless it says the cluster is empty") {
  check_refused(
      [](Extender& core) {
        std::vector<std::string> conflicts;
        return core.sync({}, false, &conflicts);
      },
      Code::kInvalidArgument, "cluster_empty");
  StateFile file("changes");
  auto core = populated(file.path);
  std::vector<std::string> conflicts;
  REQUIRE(core->sync({}, true, &conflicts).is_ok());
  CHECK(core->snapshot().bindings.empty());
  CHECK(core->sync({PodBuilder("x").whole(1).bound_to("a").obj}, true, &conflicts).code() == Code::kInvalidArgument);
}

TEST_CASE("a Sync with one pod that is not bound, or listed twice, changes nothing") {
  check_refused(
      [](Extender& core) {
        std::vector<std::string> conflicts;
        return core.sync({PodBuilder("x").whole(1).bound_to("a").obj, PodBuilder("y").whole(1).obj}, false, &conflicts);
      },
      Code::kInvalidArgument, "bound_pods[1]: pod default/y: spec.nodeName is not set");
  check_refused(
      [](Extender& core) {
        std::vector<std::string> conflicts;
        return core.sync({PodBuilder("x").whole(1).bound_to("a").obj, PodBuilder("x").whole(1).bound_to("b").obj}, false,
                         &conflicts);
      },
      Code::kInvalidArgument, "listed twice");
}

TEST_CASE("accepted changes are on disk: a restart reads the same ledger") {
  StateFile file("changes");
  json after;
  {
    auto core = populated(file.path);
    REQUIRE(core->apply({queue_object("qc", "root", 1)}, nullptr).is_ok());
    REQUIRE(core->remove("Queue", "qb").is_ok());
    REQUIRE(core->remove("Node", "b").is_ok());
    after = to_json(core->snapshot());
    CHECK(after["bindings"].size() == 2);  // b's two bindings went with it
  }
  auto reopened = open_at(file.path);
  CHECK(to_json(reopened->snapshot()) == after);
}

}  // namespace
}  // namespace fracpack::test
