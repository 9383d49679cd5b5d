// LIST then WATCH one kind of Kubernetes object, for ever, the way client-go's Reflector does
// (tools/cache/reflector.go):
//   - LIST in pages (`limit`, `continue`; a continue token the server has compacted away, 410,
//     starts the list again), then hand the whole list over at once;
//   - WATCH from the list's resourceVersion with `allowWatchBookmarks=true` and a
//     `timeoutSeconds` drawn in [5, 10) minutes; every event and bookmark moves the
//     resourceVersion, so a watch that ends (timeout, cut connection, a line that does not parse)
//     resumes where it stopped;
//   - "410 Gone" / "too old resource version" (an ERROR event or the HTTP status) means the
//     history is compacted: LIST again and reconcile, never crash;
//   - failures back off exponentially, 0.8 s doubling to 30 s, with up to 100 % jitter.
// Events reach the sink in order, in batches (what one read of the stream delivered), from the
// reflector's own thread. Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/server/extender.hpp"
#include "plugin_api/kube_api.hpp"

namespace fracpack::api {

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  /// A complete list of `kind`: it replaces everything known of that kind.
  virtual void listed(const std::string& kind, std::vector<nlohmann::json> objects) = 0;
  /// Changes in the order the API server made them.
  virtual void changed(const std::string& kind, std::vector<ApiEvent> events) = 0;
};

/// What a reflector has done, for /metrics. Counters only grow.
struct ReflectorStats {
  std::atomic<std::uint64_t> lists{0};            ///< complete lists handed over
  std::atomic<std::uint64_t> relists{0};          ///< lists forced by 410 Gone
  std::atomic<std::uint64_t> watch_restarts{0};   ///< watches that ended and were opened again
  std::atomic<std::uint64_t> events{0};           ///< ADDED, MODIFIED, DELETED
  std::atomic<std::uint64_t> bookmarks{0};
  std::atomic<std::uint64_t> errors{0};           ///< failed requests, bad lines, unexpected statuses
  std::atomic<std::int64_t> last_event_unix_ms{0};
};

class Reflector {
 public:
  struct Options {
    std::string kind;                 ///< Node, Pod, Queue, PodGroup, PriorityClass: set on listed items
    std::string path;                 ///< "/api/v1/pods", "/apis/scheduling.run.ai/v2/queues"
    std::size_t page_size = 500;      ///< LIST `limit`
    bool optional = false;            ///< a 404 (the CRD is not installed) lists as empty, retried every 30 s
    std::chrono::seconds min_watch_timeout{300};  ///< `timeoutSeconds` is drawn in [min, 2·min)
  };
  Reflector(std::shared_ptr<KubeConnection> connection, Options options, ReflectorSink& sink);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void start();
  /// Stops the thread: an open watch is cut, a backoff is interrupted.
  void stop();
  /// True once the first complete list was handed over.
  [[nodiscard]] bool synced() const { return synced_.load(); }
  [[nodiscard]] const ReflectorStats& stats() const { return stats_; }
  /// Lists again now (the open watch is cut; no backoff) and returns the generation to wait
  /// for: a list begun after this call has every write the API server made before it (a LIST
  /// without resourceVersion is a quorum read).
  std::uint64_t relist();
  /// relist() in two steps: the generation at once (nothing waits), then the cut and the wait
  /// (up to 5 s) for that list. A caller that gates on listed_since() stores the generation first.
  std::uint64_t request_relist();
  void await_relist(std::uint64_t generation);
  /// Whether a list of `generation` (relist()) or later has been handed over.
  [[nodiscard]] bool listed_since(std::uint64_t generation) const { return relists_served_.load() >= generation; }
  [[nodiscard]] const std::string& kind() const { return options_.kind; }

 private:
  /// Sets kind and apiVersion where the API server leaves them out (list items), as client-go's
  /// typed decoder does: the kind from Options, the version from Options::path.
  void stamp_type(nlohmann::json& object) const;
  enum class Outcome { kContinue, kRelist, kFailed };
  void run();
  /// Lists every page; on success the sink has the list and `rv_` its resourceVersion.
  Outcome list();
  /// Watches from `rv_` until the stream ends.
  Outcome watch();
  /// Handles one line of the watch stream into `batch`.
  Outcome line(std::string_view text, std::vector<ApiEvent>& batch);
  /// Sleeps `d`, or less if stopped. False when stopped.
  bool pause(std::chrono::milliseconds d);
  /// Cuts the request in flight, again every 10 ms, until `done` (at most `limit`); a list
  /// serving generation `spare_lists_of` or later is left alone (0: cut everything).
  void cut_until(const std::function<bool()>& done, std::chrono::milliseconds limit, std::uint64_t spare_lists_of);
  std::chrono::milliseconds next_backoff();

  std::shared_ptr<KubeConnection> connection_;
  Options options_;
  ReflectorSink& sink_;
  ReflectorStats stats_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> relist_wanted_{false};
  std::atomic<bool> exited_{false};  ///< run() has returned
  std::atomic<std::uint64_t> relists_requested_{0};
  std::atomic<std::uint64_t> relists_served_{0};  ///< the generation of the last list handed over
  std::string rv_;  ///< where the next watch starts; "" = list first
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point last_list_;  ///< when the last complete list was handed over
  bool short_watch_logged_ = false;
  std::mutex mu_;  // guards active_ and the wait below
  std::condition_variable wake_;
  httplib::Client* active_ = nullptr;  ///< the client of the request in flight, for stop()
  bool active_list_ = false;           ///< it is a list (under mu_)
  std::uint64_t active_generation_ = 0;  ///< the relist generation that list serves (under mu_)
  std::thread thread_;
};

}  // namespace fracpack::api
