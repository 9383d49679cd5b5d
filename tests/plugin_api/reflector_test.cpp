// The reflector against an in-process fake API server: paginated lists, events split across
// chunks, bookmarks moving the resourceVersion, a cut connection resumed where it stopped, a line
// that is not JSON, 410 Gone (as an ERROR event, as the HTTP status, and on a continue token)
// answered by a relist, a 404 for an optional kind, and a relist that differs from the first.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <httplib.h>

#include <doctest/doctest.h>

#include "support/kube_rig.hpp"

#include "plugin_api/reflector.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

using fracpack::ApiEvent;

/// What the reflector handed over, in order.
class RecordingSink final : public api::ReflectorSink {
 public:
  struct Entry {
    bool list = false;
    std::vector<std::string> names;  ///< listed names, or the events' "TYPE name"
  };
  void listed(const std::string&, std::vector<json> objects) override {
    Entry e{true, {}};
    for (const auto& o : objects) e.names.push_back(o["metadata"]["name"]);
    push(std::move(e));
  }
  void changed(const std::string&, std::vector<ApiEvent> events) override {
    Entry e{false, {}};
    for (const auto& ev : events) {
      const char* type = ev.type == ApiEvent::Type::kAdded ? "ADDED" : ev.type == ApiEvent::Type::kModified ? "MODIFIED" : "DELETED";
      e.names.push_back(fmt::format("{} {}", type, ev.object["metadata"]["name"].get<std::string>()));
    }
    push(std::move(e));
  }
  /// Waits until `pred(entries)` holds (5 s at most).
  bool wait(const std::function<bool(const std::vector<Entry>&)>& pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return pred(entries_); });
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& e : entries_) {
      if (!e.list) out.insert(out.end(), e.names.begin(), e.names.end());
    }
    return out;
  }
  std::vector<std::vector<std::string>> lists() {
    std::lock_guard lock(mu_);
    std::vector<std::vector<std::string>> out;
    for (const auto& e : entries_) {
      if (e.list) out.push_back(e.names);
    }
    return out;
  }

 private:
  void push(Entry e) {
    {
      std::lock_guard lock(mu_);
      entries_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
};

json pod_at(const std::string& name, int rv) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", std::to_string(rv)}}}};
}
std::string event_line(const std::string& type, const json& object) { return json{{"type", type}, {"object", object}}.dump() + "\n"; }

/// A fake API server for one path. Lists answer `list_items` in pages of 2 at `list_rv`; each watch
/// request pops the next script (what to write, in chunks; then the stream ends) or, when none is
/// left, holds the stream open with nothing. Every request's query is recorded.
class FakeApi {
 public:
  struct Script {
    int status = 200;
    std::vector<std::string> chunks;
  };
  FakeApi() {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeApi() {
    stopping_ = true;
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }

  void set_list(std::vector<std::string> names, int rv) {
    std::lock_guard lock(mu_);
    list_names_ = std::move(names);
    list_rv_ = rv;
  }
  void add_watch(Script s) {
    std::lock_guard lock(mu_);
    scripts_.push_back(std::move(s));
  }
  void expire_continue_once() {
    std::lock_guard lock(mu_);
    expire_continue_ = true;
  }
  void not_found() {
    std::lock_guard lock(mu_);
    not_found_ = true;
  }
  std::vector<std::string> watch_versions() {  // resourceVersion of each watch request
    std::lock_guard lock(mu_);
    return watch_versions_;
  }
  int lists() {
    std::lock_guard lock(mu_);
    return lists_;
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    if (not_found_) {
      res.status = 404;
      res.set_content(R"({"kind":"Status","code":404,"message":"the server could not find the requested resource"})", "application/json");
      return;
    }
    if (req.get_param_value("watch") == "1") {
      watch_versions_.push_back(req.get_param_value("resourceVersion"));
      if (scripts_.empty()) {  // hold the stream open, quietly
        lock.unlock();
        res.set_chunked_content_provider("application/json", [this](std::size_t, httplib::DataSink& sink) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          // A blank line now and then (not an event): a client that went away is noticed, and its
          // server thread freed, as kube-apiserver's watch does with its own writes.
          return !stopping_.load() && sink.write("\n", 1);
        });
        return;
      }
      Script s = scripts_.front();
      scripts_.pop_front();
      lock.unlock();
      res.status = s.status;
      if (s.status != 200) {
        res.set_content(R"({"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"})", "application/json");
        return;
      }
      auto chunks = std::make_shared<std::vector<std::string>>(std::move(s.chunks));
      auto next = std::make_shared<std::size_t>(0);
      res.set_chunked_content_provider("application/json", [chunks, next](std::size_t, httplib::DataSink& sink) {
        if (*next < chunks->size()) {
          const std::string& c = (*chunks)[(*next)++];
          sink.write(c.data(), c.size());
          std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a separate read each
          return true;
        }
        sink.done();  // the stream ends, as a watch's timeout or a cut connection does
        return true;
      });
      return;
    }
    // LIST, two items a page.
    const std::string cont = req.get_param_value("continue");
    if (!cont.empty() && expire_continue_) {
      expire_continue_ = false;
      res.status = 410;
      res.set_content(R"({"kind":"Status","code":410,"reason":"Expired","message":"continue token expired"})", "application/json");
      return;
    }
    const std::size_t from = cont.empty() ? 0 : std::stoul(cont);
    json items = json::array();
    for (std::size_t i = from; i < from + 2 && i < list_names_.size(); ++i) items.push_back(pod_at(list_names_[i], list_rv_));
    json meta = {{"resourceVersion", std::to_string(list_rv_)}};
    if (from + 2 < list_names_.size()) meta["continue"] = std::to_string(from + 2);
    if (from + 2 >= list_names_.size()) ++lists_;
    res.set_content(json{{"kind", "PodList"}, {"metadata", meta}, {"items", items}}.dump(), "application/json");
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::string> list_names_;
  int list_rv_ = 1;
  std::deque<Script> scripts_;
  bool expire_continue_ = false;
  bool not_found_ = false;
  std::vector<std::string> watch_versions_;
  int lists_ = 0;
};

std::shared_ptr<api::KubeConnection> connect(const FakeApi& fake) {
  auto c = api::KubeConnection::open({fake.url(), "", ""});
  REQUIRE(c.is_ok());
  return *c;
}

api::Reflector::Options pods(bool optional = false) {
  api::Reflector::Options o;
  o.kind = "Pod";
  o.path = "/api/v1/pods";
  o.page_size = 2;
  o.optional = optional;
  return o;
}

TEST_CASE("reflector: a paged list, then events split across chunks, in order") {
  FakeApi fake;
  fake.set_list({"a", "b", "c", "d", "e"}, 10);
  const std::string added = event_line("ADDED", pod_at("f", 11));
  const std::string modified = event_line("MODIFIED", pod_at("a", 12));
  // One event cut in three, the next starting in the same chunk as the first's end.
  fake.add_watch({200, {added.substr(0, 7), added.substr(7, 20), added.substr(27) + modified.substr(0, 5), modified.substr(5)}});
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  REQUIRE(sink.wait([](const auto& e) { return e.size() >= 3; }));
  r.stop();
  REQUIRE(sink.lists().size() >= 1);
  CHECK(sink.lists()[0] == std::vector<std::string>{"a", "b", "c", "d", "e"});  // every page, handed over once
  const auto events = sink.events();
  REQUIRE(events.size() >= 2);
  CHECK(events[0] == "ADDED f");
  CHECK(events[1] == "MODIFIED a");
  CHECK(r.synced());
  CHECK(fake.watch_versions().front() == "10");  // watched from the list's resourceVersion
}

TEST_CASE("reflector: a cut stream resumes from the last event or bookmark, without listing again") {
  FakeApi fake;
  fake.set_list({"a"}, 5);
  fake.add_watch({200, {event_line("ADDED", pod_at("b", 6)), event_line("BOOKMARK", pod_at("", 9))}});  // then cut
  fake.add_watch({200, {"{not json at all\n"}});                                                         // a bad line
  fake.add_watch({200, {event_line("DELETED", pod_at("a", 10))}});
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  REQUIRE(sink.wait([](const auto& e) {
    for (const auto& x : e) {
      if (!x.list && x.names == std::vector<std::string>{"DELETED a"}) return true;
    }
    return false;
  }));
  r.stop();
  const auto versions = fake.watch_versions();
  REQUIRE(versions.size() >= 3);
  CHECK(versions[0] == "5");
  CHECK(versions[1] == "9");  // the bookmark's resourceVersion
  CHECK(versions[2] == "9");  // the bad line was not an event: from where the stream was
  CHECK(fake.lists() == 1);
  CHECK(r.stats().relists.load() == 0);
  CHECK(r.stats().bookmarks.load() == 1);
  CHECK(r.stats().errors.load() >= 1);
}

TEST_CASE("reflector: relist() cuts a quiet watch and lists again at once, every time (a new leader's catch-up)") {
  FakeApi fake;
  fake.set_list({"a"}, 5);
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);  // no watch scripts: every watch is held open, quietly
  r.start();
  REQUIRE(sink.wait([](const auto& e) { return !e.empty(); }));
  // Again and again, at every point of the loop (a list in flight, a watch just registered, one
  // open): each relist is served by a list begun after it, within seconds, not at the watch's end.
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t generation = r.relist();
    const bool served = KubeRig::wait_until([&] { return r.listed_since(generation); }, std::chrono::seconds(5));
    REQUIRE_MESSAGE(served, "relist ", i, " was not served");
    if (i % 3 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(i % 7));
  }
  CHECK(fake.lists() >= 41);
  r.stop();  // returns: the open watch is cut
}

TEST_CASE("reflector: 410 Gone, as an event or as the status, lists again; the new list replaces the old") {
  FakeApi fake;
  fake.set_list({"a", "b"}, 5);
  fake.add_watch({200, {event_line("ERROR", {{"kind", "Status"}, {"code", 410}, {"message", "too old resource version: 5 (8)"}})}});
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  REQUIRE(sink.wait([](const auto& e) { return !e.empty(); }));
  fake.set_list({"b", "c"}, 20);          // what changed while the history was lost
  fake.add_watch({410, {}});              // and then the HTTP status itself
  REQUIRE(sink.wait([](const auto& e) { return e.size() >= 3; }));
  r.stop();
  const auto lists = sink.lists();
  REQUIRE(lists.size() >= 2);
  CHECK(lists[1] == std::vector<std::string>{"b", "c"});
  CHECK(r.stats().relists.load() >= 2);
}

TEST_CASE("reflector: an expired continue token starts the list again; a 404 of an optional kind lists as empty") {
  FakeApi fake;
  fake.set_list({"a", "b", "c"}, 7);
  fake.expire_continue_once();
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  REQUIRE(sink.wait([](const auto& e) { return !e.empty(); }));
  r.stop();
  CHECK(sink.lists()[0] == std::vector<std::string>{"a", "b", "c"});  // whole, not the pages after the expiry

  FakeApi missing;
  missing.not_found();
  RecordingSink empty;
  api::Reflector optional(connect(missing), pods(/*optional=*/true), empty);
  optional.start();
  REQUIRE(empty.wait([](const auto& e) { return !e.empty(); }));
  CHECK(optional.synced());
  CHECK(empty.lists()[0].empty());
  optional.stop();  // interrupts its 30 s wait at once
}

TEST_CASE("reflector: a failing server is retried with backoff, and synced only after a list") {
  FakeApi fake;
  fake.not_found();  // not optional: a failure
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK_FALSE(r.synced());
  const auto errors = r.stats().errors.load();
  CHECK(errors >= 1);
  CHECK(errors <= 3);  // 0.8 s, then 1.6–3.2 s: not a busy loop
  r.stop();
}

TEST_CASE("the extender core reconciles a relist: pods the list does not name are released") {
  ExtenderOptions options;
  options.watching = true;
  auto core = Extender::open(options);
  REQUIRE(core.is_ok());
  Extender& c = **core;
  CHECK_FALSE(c.synced());
  c.watch_listed("Node", {nvf("n", 2, 80000).obj}, nullptr);
  auto bound = [](const std::string& name, const std::string& devices) {
    return PodBuilder(name).uid("u-" + name).gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", devices).bound_to("n").obj;
  };
  c.watch_listed("Pod", {bound("a", "0"), bound("b", "1")}, nullptr);
  CHECK(c.snapshot().bindings.size() == 2);
  // History lost; the relist has b and a new c.
  c.watch_listed("Pod", {bound("b", "1"), bound("c", "0")}, nullptr);
  std::set<std::string> held;
  for (const auto& b : c.snapshot().bindings) held.insert(b.pod);
  CHECK(held == std::set<std::string>{"default/b", "default/c"});
  CHECK(c.verify().empty());
  // A Succeeded pod gives its GPU back; a deleted one too.
  json done = bound("b", "1");
  done["status"]["phase"] = "Succeeded";
  c.watch_changed("Pod", {{ApiEvent::Type::kModified, done}, {ApiEvent::Type::kDeleted, bound("c", "0")}}, nullptr);
  CHECK(c.snapshot().bindings.empty());
  // Apply and Sync belong to the API server now.
  CHECK(c.apply({nvf("m", 1, 80000).obj}, nullptr).code() == Code::kFailedPrecondition);
  std::vector<std::string> conflicts;
  CHECK(c.sync({}, true, &conflicts).code() == Code::kFailedPrecondition);
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("reflector: items and objects that are not objects are skipped, never a crash") {
  FakeApi fake;
  fake.set_list({"a"}, 5);
  fake.add_watch({200, {R"({"type":"ADDED","object":"x"})" "\n", R"({"type":"ADDED","object":[1]})" "\n", event_line("ADDED", pod_at("b", 6))}});
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  REQUIRE(sink.wait([](const auto& e) { return e.size() >= 2; }));
  r.stop();
  CHECK(sink.events() == std::vector<std::string>{"ADDED b"});
  CHECK(r.stats().errors.load() >= 2);
}

TEST_CASE("reflector: a server that ends every watch at once, or answers every watch 410, is not asked in a loop") {
  FakeApi fake;
  fake.set_list({"a"}, 5);
  for (int i = 0; i < 50; ++i) fake.add_watch({200, {}});  // 200, and the stream ends with nothing
  RecordingSink sink;
  api::Reflector r(connect(fake), pods(), sink);
  r.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  r.stop();
  CHECK(fake.watch_versions().size() <= 4);  // 0.8 s, then 1.6–3.2 s apart: not ~1,000 a second

  FakeApi gone;
  gone.set_list({"a"}, 5);
  for (int i = 0; i < 50; ++i) gone.add_watch({410, {}});
  RecordingSink relisted;
  api::Reflector again(connect(gone), pods(), relisted);
  again.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  again.stop();
  CHECK(gone.lists() <= 4);
}

}  // namespace
}  // namespace fracpack::test
