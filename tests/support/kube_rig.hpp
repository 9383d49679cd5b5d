// kube-rig (../shared/tools/kube-rig): the real kube-scheduler v1.20.5 scheduling loop over an
// in-memory API server with the real wire encoding, for end-to-end tests and benchmarks.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/spawn.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {

/// A kube-rig binary: $`variable`, else shared/tools/`folder`/kube-rig beside the checkout or one
/// of its parents.
inline std::optional<std::filesystem::path> find_kube_rig(const char* variable, const char* folder) {
  if (const char* path = std::getenv(variable); path != nullptr && *path != '\0') {
    if (std::filesystem::exists(path)) return std::filesystem::path(path);
    return std::nullopt;
  }
  std::filesystem::path at = std::filesystem::weakly_canonical(FRACPACK_SOURCE_DIR);
  for (int up = 0; up < 5 && !at.empty(); ++up, at = at.parent_path()) {
    const auto candidate = at / "shared" / "tools" / folder / "kube-rig";
    if (std::filesystem::exists(candidate)) return candidate;
    if (at == at.parent_path()) break;
  }
  return std::nullopt;
}

/// kube-rig with kube-scheduler v1.20.5: $FRACPACK_KUBE_RIG, else shared/tools/kube-rig/kube-rig.
inline std::optional<std::filesystem::path> kube_rig_binary() { return find_kube_rig("FRACPACK_KUBE_RIG", "kube-rig"); }

/// kube-rig with the real kube-scheduler v1.35.4 beside it: $FRACPACK_KUBE_RIG_135, else
/// shared/tools/kube-rig-1.35/kube-rig.
inline std::optional<std::filesystem::path> kube_rig_135_binary() {
  return find_kube_rig("FRACPACK_KUBE_RIG_135", "kube-rig-1.35");
}

/// examples/kube-scheduler/fracpack-scheduler.yaml (what docs/kube-scheduler.md deploys), with
/// fracpack at `fracpack_port`: the tests run the documented configuration, not a copy of it.
inline std::string rig_scheduler_config(int fracpack_port) {
  std::string text = read_file(std::string(FRACPACK_SOURCE_DIR) + "/examples/kube-scheduler/fracpack-scheduler.yaml");
  const std::string documented = "http://127.0.0.1:8888";
  const auto at = text.find(documented);
  if (at == std::string::npos) throw std::runtime_error("fracpack-scheduler.yaml: no urlPrefix " + documented);
  text.replace(at, documented.size(), fmt::format("http://127.0.0.1:{}", fracpack_port));
  return text;
}

class KubeRig {
 public:
  using json = nlohmann::json;
  /// Starts kube-rig on `port` with `scheduler_config` (text; empty: --no-scheduler) and the
  /// preloaded `objects` files; ready once it says so.
  /// `extra`: more flags (--strict-decoding, --log-requests).
  KubeRig(const std::filesystem::path& binary, int port, const std::string& scheduler_config,
          const std::vector<std::string>& objects, const std::filesystem::path& dir, const std::vector<std::string>& extra = {})
      : port_(port), log_(dir / fmt::format("kube-rig-{}.log", port)) {
    std::vector<std::string> args{"kube-rig", "--listen", fmt::format("127.0.0.1:{}", port), "--bookmark-interval", "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (scheduler_config.empty()) {
      args.emplace_back("--no-scheduler");
    } else {
      const auto config = dir / fmt::format("scheduler-{}.yaml", port);
      std::ofstream(config) << scheduler_config;
      args.insert(args.end(), {"--scheduler-config", config.string()});
    }
    for (const auto& o : objects) args.insert(args.end(), {"--objects", o});
    pid_ = spawn(binary, args, log_.string());
    const bool up = wait_until([&] {
      const std::string text = read_file(log_);
      return text.find("kube-rig: ready") != std::string::npos;
    }, std::chrono::seconds(30));
    if (!up) throw std::runtime_error("kube-rig did not come up (see " + log_.string() + ")");
  }
  KubeRig(const KubeRig&) = delete;
  KubeRig& operator=(const KubeRig&) = delete;
  ~KubeRig() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  [[nodiscard]] std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  [[nodiscard]] const std::filesystem::path& log() const { return log_; }

  /// GET; the body as JSON (null when the request failed or the status is not 200).
  json get(const std::string& path) const {
    auto res = client().Get(path);
    return res && res->status == 200 ? json::parse(res->body, nullptr, false) : json();
  }
  /// A write; the HTTP status (0 when the request failed).
  int send(const std::string& method, const std::string& path, const json& body = json(),
           const std::string& type = "application/json") const {
    httplib::Client c = client();
    httplib::Result res = method == "POST"    ? c.Post(path, body.is_null() ? "" : body.dump(), type)
                          : method == "PATCH" ? c.Patch(path, body.dump(), type)
                          : method == "PUT"   ? c.Put(path, body.dump(), type)
                                              : c.Delete(path);
    return res ? res->status : 0;
  }
  /// Where objects of `object`'s kind are created: /api/v1[/namespaces/NS]/PLURAL or
  /// /apis/GROUP/VERSION[/namespaces/NS]/PLURAL (plural: the kind in lower case plus "s").
  static std::string collection_path(const json& object) {
    static const std::set<std::string> cluster_scoped = {"Namespace", "Node", "PriorityClass", "Queue", "ClusterRole",
                                                         "ClusterRoleBinding", "PersistentVolume", "StorageClass"};
    const std::string kind = object.value("kind", "");
    const std::string api_version = object.value("apiVersion", "v1");
    std::string plural;
    for (char c : kind) plural += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    plural += "s";
    const std::string base = api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
    if (cluster_scoped.count(kind) > 0) return base + "/" + plural;
    const std::string ns = object.contains("metadata") ? object["metadata"].value("namespace", "default") : "default";
    return fmt::format("{}/namespaces/{}/{}", base, ns, plural);
  }
  /// Creates `object` where it belongs; the status and the answer's body.
  std::pair<int, std::string> create_answer(json object) const {
    json& meta = object["metadata"];
    meta.erase("uid");
    meta.erase("resourceVersion");
    object.erase("status");
    auto res = client().Post(collection_path(object), object.dump(), "application/json");
    return res ? std::pair{res->status, res->body} : std::pair{0, std::string(httplib::to_string(res.error()))};
  }
  /// Creates `object` where it belongs; the HTTP status (0 when the request failed).
  int create(json object) const { return create_answer(std::move(object)).first; }
  json pod(const std::string& key) const {
    const auto slash = key.find('/');
    return get(fmt::format("/api/v1/namespaces/{}/pods/{}", key.substr(0, slash), key.substr(slash + 1)));
  }
  int delete_pod(const std::string& key) const {
    const auto slash = key.find('/');
    return send("DELETE", fmt::format("/api/v1/namespaces/{}/pods/{}", key.substr(0, slash), key.substr(slash + 1)));
  }
  /// spec.nodeName of the pod, "" when pending or absent.
  std::string node_of(const std::string& key) const {
    const json p = pod(key);
    return p.is_object() && p.contains("spec") && p["spec"].contains("nodeName") ? p["spec"]["nodeName"].get<std::string>() : "";
  }
  /// The newest FailedScheduling message for the pod ("" when none yet).
  std::string failed_scheduling(const std::string& key) const {
    const auto slash = key.find('/');
    const json events = get(fmt::format("/api/v1/namespaces/{}/events?fieldSelector=involvedObject.name={},reason=FailedScheduling",
                                        key.substr(0, slash), key.substr(slash + 1)));
    std::string newest;
    if (events.is_object()) {
      for (const auto& e : events["items"]) newest = e.value("message", "");
    }
    return newest;
  }

  static bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }

 private:
  [[nodiscard]] httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    return c;
  }
  int port_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
};

}  // namespace fracpack::test
