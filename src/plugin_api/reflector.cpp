#include "plugin_api/reflector.hpp"

#include <random>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

namespace fracpack::api {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxPages = 100'000;            ///< 50 M objects at 500 a page: a continue that never ends
constexpr std::size_t kMaxLine = std::size_t{64} << 20;  ///< one watch event; Kubernetes objects are at most ~1.5 MiB

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A query parameter's value, percent-encoded (continue tokens and resourceVersions are opaque).
std::string escaped(const std::string& value) { return httplib::detail::encode_query_param(value); }

/// The Status object's code in an ERROR event or an error body (0 when there is none).
int status_code(const json& status) {
  if (!status.is_object()) return 0;
  auto c = status.find("code");
  return c != status.end() && c->is_number_integer() ? c->get<int>() : 0;
}

std::string status_message(const json& status) {
  if (status.is_object() && status.contains("message") && status["message"].is_string()) return status["message"];
  return status.dump().substr(0, 300);
}

/// The apiVersion of the objects under a resource path: "/api/v1/pods" → "v1",
/// "/apis/scheduling.run.ai/v2/queues" → "scheduling.run.ai/v2".
std::string api_version_of(std::string_view path) {
  if (path.starts_with("/api/")) {
    path.remove_prefix(5);
    return std::string(path.substr(0, path.find('/')));
  }
  if (!path.starts_with("/apis/")) return "";
  path.remove_prefix(6);
  const auto group_end = path.find('/');
  if (group_end == std::string_view::npos) return "";
  const auto version_end = path.find('/', group_end + 1);
  return std::string(path.substr(0, version_end));
}

}  // namespace

void Reflector::stamp_type(nlohmann::json& object) const {
  if (!object.contains("kind")) object["kind"] = options_.kind;
  if (!object.contains("apiVersion")) object["apiVersion"] = api_version_of(options_.path);
}

Reflector::Reflector(std::shared_ptr<KubeConnection> connection, Options options, ReflectorSink& sink)
    : connection_(std::move(connection)), options_(std::move(options)), sink_(sink) {}

Reflector::~Reflector() { stop(); }

void Reflector::start() {
  thread_ = std::thread([this] { run(); });
}

void Reflector::cut_until(const std::function<bool()>& done, std::chrono::milliseconds limit, std::uint64_t spare_lists_of) {
  // httplib's Client::stop() closes nothing when the request has not opened its socket yet: a
  // request registered just before would then run on (a quiet watch, for minutes). Cut again
  // until the thread has moved on, but never a list that already serves `spare_lists_of`.
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard lock(mu_);
      const bool spare = spare_lists_of != 0 && active_list_ && active_generation_ >= spare_lists_of;
      if (active_ != nullptr && !spare) active_->stop();
    }
    wake_.notify_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Reflector::stop() {
  stopping_ = true;
  if (thread_.joinable()) cut_until([this] { return exited_.load(); }, std::chrono::hours(1), 0);
  if (thread_.joinable()) thread_.join();
}

bool Reflector::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, d, [&] { return stopping_.load() || relist_wanted_.load(); });
  return !stopping_;
}

std::chrono::milliseconds Reflector::next_backoff() {
  // client-go's default: 800 ms doubling to 30 s, jittered by up to the step itself.
  backoff_ = backoff_.count() == 0 ? std::chrono::milliseconds(800) : std::min(backoff_ * 2, std::chrono::milliseconds(30'000));
  thread_local std::mt19937 rng(std::random_device{}());
  return backoff_ + std::chrono::milliseconds(std::uniform_int_distribution<std::int64_t>(0, backoff_.count())(rng));
}

void Reflector::run() {
  struct Exit {
    std::atomic<bool>& exited;
    ~Exit() { exited = true; }
  } exit{exited_};
  while (!stopping_) {
    if (relist_wanted_.exchange(false)) rv_.clear();
    const bool watching = !rv_.empty();
    Outcome outcome = watching ? watch() : list();
    if (stopping_) break;
    if (relist_wanted_) continue;  // cut for relist(): list now, no backoff
    if (outcome == Outcome::kRelist) {
      rv_.clear();
      ++stats_.relists;
      // A relist forced again within a second of the last list (a server whose watches always
      // answer 410) backs off like a failure, not a loop of lists.
      const auto now = std::chrono::steady_clock::now();
      if (now - last_list_ < std::chrono::seconds(1) && !pause(next_backoff())) break;
      continue;
    }
    if (outcome == Outcome::kFailed) {
      ++stats_.errors;
      if (!pause(next_backoff())) break;
      continue;
    }
    if (watching) ++stats_.watch_restarts;  // the watch ended: opened again from where it stopped
  }
}

std::uint64_t Reflector::relist() {
  const std::uint64_t generation = request_relist();
  await_relist(generation);
  return generation;
}

std::uint64_t Reflector::request_relist() {
  const std::uint64_t generation = ++relists_requested_;
  relist_wanted_ = true;
  return generation;
}

void Reflector::await_relist(std::uint64_t generation) {
  // The open watch (or a list begun before) ends now; the loop takes the flag when it lists.
  if (thread_.joinable()) {
    cut_until([this, generation] { return listed_since(generation) || exited_.load(); }, std::chrono::seconds(5), generation);
  }
}

Reflector::Outcome Reflector::list() {
  const std::uint64_t serving = relists_requested_.load();  // a list begun after relist(n) serves n
  std::vector<json> items;
  std::string cont;
  std::string version;
  std::size_t pages = 0;
  for (;;) {
    auto client = connection_->client(std::chrono::seconds(60));
    {
      std::lock_guard lock(mu_);
      active_ = client.get();
      active_list_ = true;
      active_generation_ = serving;
    }
    std::string path = fmt::format("{}?limit={}", options_.path, options_.page_size);
    if (!cont.empty()) path += "&continue=" + escaped(cont);
    auto res = client->Get(path, {{"Accept", "application/json"}});
    {
      std::lock_guard lock(mu_);
      active_ = nullptr;
    }
    if (stopping_) return Outcome::kFailed;
    if (!res) {
      spdlog::warn("list {}: {} ({}); retrying with backoff", options_.path, httplib::to_string(res.error()),
                   res.error() == httplib::Error::Connection ? "the API server is not reachable" : "no answer");
      return Outcome::kFailed;
    }
    if (res->status == 404 && options_.optional) {  // the resource is not served (no CRD): nothing of it
      if (!synced_) {
        spdlog::info("list {}: not served by the API server (404); treated as empty, asked again every 30 s", options_.path);
      }
      synced_ = true;  // before the handover: the sink asks whether every kind is listed
      ++stats_.lists;
      sink_.listed(options_.kind, {});
      return pause(std::chrono::seconds(30)) ? Outcome::kContinue : Outcome::kFailed;
    }
    json body = json::parse(res->body, nullptr, false);
    if (res->status == 410 && !cont.empty()) return Outcome::kRelist;  // the continue token expired: from the start
    if (res->status != 200 || !body.is_object() || !body.contains("items") || !body["items"].is_array()) {
      spdlog::warn("list {}: HTTP {}: {}", options_.path, res->status, status_message(body));
      return Outcome::kFailed;
    }
    for (auto& item : body["items"]) {
      if (!item.is_object() || !item.contains("metadata") || !item["metadata"].is_object()) {
        ++stats_.errors;  // not an object of the kind: nothing to apply (and nothing to crash on)
        continue;
      }
      stamp_type(item);  // list items carry no kind
      items.push_back(std::move(item));
    }
    if (++pages > kMaxPages) {
      spdlog::warn("list {}: more than {} pages; the continue tokens do not end", options_.path, kMaxPages);
      return Outcome::kFailed;
    }
    const json& meta = body.contains("metadata") ? body["metadata"] : json::object();
    if (version.empty() && meta.contains("resourceVersion") && meta["resourceVersion"].is_string()) version = meta["resourceVersion"];
    cont = meta.contains("continue") && meta["continue"].is_string() ? meta["continue"].get<std::string>() : "";
    if (cont.empty()) break;
  }
  if (version.empty()) {
    spdlog::warn("list {}: the answer has no resourceVersion", options_.path);
    return Outcome::kFailed;
  }
  rv_ = version;
  last_list_ = std::chrono::steady_clock::now();
  synced_ = true;  // before the handover: the sink asks whether every kind is listed
  ++stats_.lists;
  sink_.listed(options_.kind, std::move(items));
  relists_served_ = serving;
  stats_.last_event_unix_ms = now_unix_ms();
  return Outcome::kContinue;
}

Reflector::Outcome Reflector::line(std::string_view text, std::vector<ApiEvent>& batch) {
  const json event = json::parse(text, nullptr, false);
  if (!event.is_object() || !event.contains("type") || !event["type"].is_string() || !event.contains("object")) {
    spdlog::warn("watch {}: a line that is not a watch event: {}", options_.path, std::string(text.substr(0, 200)));
    return Outcome::kFailed;
  }
  const std::string type = event["type"];
  const json& object = event["object"];
  if (type == "ERROR") {
    const int code = status_code(object);
    if (code == 410) {
      spdlog::info("watch {}: {} (history compacted): listing again", options_.path, status_message(object));
      return Outcome::kRelist;
    }
    spdlog::warn("watch {}: ERROR event: {}", options_.path, status_message(object));
    return Outcome::kFailed;
  }
  const json* meta = object.is_object() && object.contains("metadata") ? &object["metadata"] : nullptr;
  if (meta != nullptr && meta->contains("resourceVersion") && (*meta)["resourceVersion"].is_string()) rv_ = (*meta)["resourceVersion"];
  if (type == "BOOKMARK") {
    ++stats_.bookmarks;
    return Outcome::kContinue;
  }
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    spdlog::warn("watch {}: a {} event whose object is not an object of the kind; skipped", options_.path, type);
    ++stats_.errors;
    return Outcome::kContinue;
  }
  ApiEvent e;
  if (type == "ADDED") {
    e.type = ApiEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    e.type = ApiEvent::Type::kModified;
  } else if (type == "DELETED") {
    e.type = ApiEvent::Type::kDeleted;
  } else {
    spdlog::warn("watch {}: unknown event type {}", options_.path, type);
    return Outcome::kContinue;
  }
  e.object = object;
  stamp_type(e.object);
  batch.push_back(std::move(e));
  ++stats_.events;
  return Outcome::kContinue;
}

Reflector::Outcome Reflector::watch() {
  thread_local std::mt19937 rng(std::random_device{}());
  const auto timeout = options_.min_watch_timeout.count() +
                       std::uniform_int_distribution<std::int64_t>(0, options_.min_watch_timeout.count() - 1)(rng);
  const std::string path = fmt::format("{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}", options_.path,
                                       timeout, escaped(rv_));
  auto client = connection_->client(std::chrono::seconds(timeout + 30));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Outcome::kFailed;
    active_ = client.get();
    active_list_ = false;
  }
  Outcome outcome = Outcome::kContinue;
  int status = 0;
  std::string pending;       // bytes of a line not complete yet
  std::size_t searched = 0;  // of which this many hold no newline (each byte is searched once)
  std::size_t lines = 0;
  std::string error_body;
  const auto opened = std::chrono::steady_clock::now();
  auto res = client->Get(
      path, {{"Accept", "application/json"}},
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, std::size_t size) {
        if (status != 200) {  // an error body: keep some of it for the message
          if (error_body.size() < 4096) error_body.append(data, std::min<std::size_t>(size, 4096));
          return true;
        }
        pending.append(data, size);
        std::vector<ApiEvent> batch;
        std::size_t start = 0;
        for (std::size_t nl; (nl = pending.find('\n', std::max(start, searched))) != std::string::npos; start = nl + 1) {
          ++lines;
          if (nl > start) outcome = line(std::string_view(pending).substr(start, nl - start), batch);
          if (outcome != Outcome::kContinue) break;
        }
        pending.erase(0, start);
        searched = pending.size();
        if (outcome == Outcome::kContinue && pending.size() > kMaxLine) {
          spdlog::warn("watch {}: a line longer than {} MiB without its end; watching again", options_.path, kMaxLine >> 20);
          outcome = Outcome::kFailed;
        }
        if (!batch.empty()) {
          sink_.changed(options_.kind, std::move(batch));
          stats_.last_event_unix_ms = now_unix_ms();
        }
        if (outcome == Outcome::kContinue) backoff_ = std::chrono::milliseconds(0);  // events flow: healthy again
        return outcome == Outcome::kContinue && !stopping_;
      });
  {
    std::lock_guard lock(mu_);
    active_ = nullptr;
  }
  if (outcome != Outcome::kContinue) return outcome;
  if (status == 410) return Outcome::kRelist;
  if (status == 404) return Outcome::kRelist;  // the resource went (a CRD deleted): list again (empty, if optional)
  if (status != 0 && status != 200) {
    spdlog::warn("watch {}: HTTP {}: {}", options_.path, status, status_message(json::parse(error_body, nullptr, false)));
    return Outcome::kFailed;
  }
  if (relist_wanted_) return Outcome::kContinue;  // cut by relist(): no news, no backoff
  if (!res && res.error() != httplib::Error::Read && res.error() != httplib::Error::Canceled) {
    if (!stopping_) {  // a watch cut by stop() is no news
      spdlog::warn("watch {}: {} ({}); watching again with backoff", options_.path, httplib::to_string(res.error()),
                   res.error() == httplib::Error::Connection ? "the API server is not reachable" : "no answer");
    }
    return Outcome::kFailed;
  }
  if (lines == 0 && std::chrono::steady_clock::now() - opened < std::chrono::seconds(1)) {
    // client-go's "very short watch": a server that ends every watch at once must not be asked
    // again in a loop.
    if (!short_watch_logged_) spdlog::warn("watch {}: the server ended the watch at once, with nothing; backing off", options_.path);
    short_watch_logged_ = true;
    return Outcome::kFailed;
  }
  short_watch_logged_ = false;
  return Outcome::kContinue;  // the stream ended (timeout, or the server closed it): watch again from rv_
}

}  // namespace fracpack::api
