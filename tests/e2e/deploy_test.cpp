// deploy/kubernetes against kube-rig: every manifest decodes strictly as the v1.20 types (unknown
// fields refused with their path), the kube-scheduler configuration it carries is one kube-scheduler
// accepts, and the RBAC rules allow every request fracpack makes and nothing it does not.
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "support/builders.hpp"
#include "support/device_agent.hpp"
#include "support/kube_payloads.hpp"
#include "support/require_kube_rig.hpp"
#include "support/server_process.hpp"
#include "support/tls_files.hpp"

namespace fracpack::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kDeploy = fs::path(FRACPACK_SOURCE_DIR) / "deploy" / "kubernetes";

/// Every object of every manifest, in file order.
std::vector<json> manifests() {
  std::vector<json> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kDeploy)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto objects = k8s::read_objects_file(f.string());
    REQUIRE_MESSAGE(objects.is_ok(), objects.status().message());
    for (auto& o : *objects) out.push_back(std::move(o));
  }
  return out;
}

struct Dir {
  fs::path path = fs::temp_directory_path() / fmt::format("fracpack-deploy-{}-{}", getpid(), std::rand());
  Dir() { fs::create_directories(path); }
  ~Dir() {
    if (std::getenv("FRACPACK_E2E_KEEP") == nullptr) fs::remove_all(path);
  }
};

TEST_CASE("every manifest in deploy/kubernetes is created by a kube-rig that decodes strictly") {
  auto rig_binary = require_kube_rig();
  if (!rig_binary) return;
  Dir dir;
  KubeRig rig(*rig_binary, free_port(), "", {}, dir.path, {"--strict-decoding"});
  const auto objects = manifests();
  std::set<std::string> kinds;
  for (const auto& o : objects) {
    const std::string what = fmt::format("{} {}", o.value("kind", ""), o["metadata"].value("name", ""));
    CAPTURE(what);
    const auto [status, body] = rig.create_answer(o);
    CHECK_MESSAGE(status == 201, body);
    kinds.insert(o.value("kind", ""));
  }
  for (const char* kind : {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment",
                           "Service", "PodDisruptionBudget", "ServiceMonitor", "ConfigMap"}) {
    CHECK_MESSAGE(kinds.count(kind) == 1, kind);
  }
  // The check has teeth: a misspelt field is refused with its path.
  json broken = objects.front();
  for (const auto& o : objects) {
    if (o.value("kind", "") == "Deployment") broken = o;
  }
  broken["metadata"]["name"] = "misspelt";
  broken["spec"]["replcas"] = 2;
  const auto [status, body] = rig.create_answer(broken);
  CHECK(status == 400);
  CHECK(body.find("spec.replcas") != std::string::npos);
}

TEST_CASE("the kube-scheduler configuration in the manifests is one kube-scheduler v1.20.5 accepts") {
  auto rig_binary = require_kube_rig();
  if (!rig_binary) return;
  std::string config;
  for (const auto& o : manifests()) {
    if (o.value("kind", "") == "ConfigMap" && o["metadata"].value("name", "") == "kai-scheduler-config") config = o["data"]["config.yaml"];
  }
  REQUIRE_FALSE(config.empty());
  // The Secret's files, here from a throwaway PKI (kube-scheduler reads them at start).
  TlsFiles pki;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"/etc/kai-scheduler/fracpack-client/tls.crt", pki.client_cert},
           {"/etc/kai-scheduler/fracpack-client/tls.key", pki.client_key},
           {"/etc/kai-scheduler/fracpack-client/ca.crt", pki.ca}}) {
    const auto at = config.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    config.replace(at, from.size(), to);
  }
  Dir dir;
  KubeRig rig(*rig_binary, free_port(), config, {}, dir.path);  // throws when kube-rig refuses the configuration
  const json health = rig.get("/rig/healthz");
  CHECK(health.dump().find("https://fracpack.fracpack-system.svc:8443") != std::string::npos);
}

/// One request as RBAC sees it.
struct Access {
  std::string verb, group, resource, ns;  ///< ns "" = cluster-wide (a list or watch across namespaces)
  std::string name = "*";                 ///< the object a request names; a rule's resourceName, "*" for any
  bool operator<(const Access& o) const {
    return std::tie(verb, group, resource, ns, name) < std::tie(o.verb, o.group, o.resource, o.ns, o.name);
  }
  [[nodiscard]] std::string text() const {
    return fmt::format("{} {}/{}{} in {}", verb, group, resource, name == "*" ? "" : " " + name, ns.empty() ? "*" : ns);
  }
};

/// "GET /api/v1/namespaces/x/pods/p?y" → get ""/pods in x.
std::optional<Access> access_of(const std::string& method, const std::string& uri) {
  const std::string path = uri.substr(0, uri.find('?'));
  const std::string query = uri.find('?') == std::string::npos ? "" : uri.substr(uri.find('?') + 1);
  std::vector<std::string> parts;
  for (std::size_t at = 1; at <= path.size();) {
    const auto next = path.find('/', at);
    parts.push_back(path.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  std::size_t i = 0;
  Access a;
  if (parts.size() >= 2 && parts[0] == "api") {
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    a.group = parts[1];
    i = 3;
  } else {
    return std::nullopt;  // /rig/..., /healthz, /version: not resources
  }
  if (i + 1 < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) {
    a.ns = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size()) return std::nullopt;
  a.resource = parts[i];
  const bool named = i + 1 < parts.size();
  if (named) a.name = parts[i + 1];
  if (i + 2 < parts.size()) a.resource += "/" + parts[i + 2];
  const bool watch = query.find("watch=true") != std::string::npos || query.find("watch=1") != std::string::npos;
  if (method == "GET") a.verb = named ? "get" : watch ? "watch" : "list";
  if (method == "POST") a.verb = "create";
  if (method == "PUT") a.verb = "update";
  if (method == "PATCH") a.verb = "patch";
  if (method == "DELETE") a.verb = "delete";
  return a;
}

/// The rules deploy/kubernetes/10-rbac.yaml grants fracpack's ServiceAccount: each verb, group,
/// resource and namespace ("" for a ClusterRole bound cluster-wide).
std::set<Access> granted() {
  std::map<std::string, json> cluster_roles, roles;
  std::vector<json> bindings;
  const auto objects = k8s::read_objects_file((kDeploy / "10-rbac.yaml").string());
  REQUIRE_MESSAGE(objects.is_ok(), objects.status().message());
  for (const auto& o : *objects) {
    const std::string kind = o.value("kind", "");
    if (kind == "ClusterRole") cluster_roles[o["metadata"]["name"]] = o;
    if (kind == "Role") roles[o["metadata"]["namespace"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>()] = o;
    if (kind == "ClusterRoleBinding" || kind == "RoleBinding") bindings.push_back(o);
  }
  std::set<Access> out;
  for (const auto& b : bindings) {
    const bool cluster = b["kind"] == "ClusterRoleBinding";
    const std::string ns = cluster ? "" : b["metadata"]["namespace"].get<std::string>();
    const std::string ref = b["roleRef"]["name"];
    const json& role = b["roleRef"]["kind"] == "ClusterRole" ? cluster_roles.at(ref) : roles.at(ns + "/" + ref);
    for (const auto& rule : role["rules"]) {
      for (const auto& g : rule["apiGroups"]) {
        for (const auto& r : rule["resources"]) {
          const json names = rule.contains("resourceNames") ? rule["resourceNames"] : json::array({"*"});
          for (const auto& v : rule["verbs"]) {
            for (const auto& n : names) out.insert({v, g, r, ns, n});
          }
        }
      }
    }
  }
  return out;
}

/// A rule for this namespace or cluster-wide, for this object's name or any (RBAC's resourceNames).
bool allowed(const std::set<Access>& rules, const Access& a) {
  for (const std::string& ns : {a.ns, std::string()}) {
    for (const std::string& name : {a.name, std::string("*")}) {
      if (rules.count({a.verb, a.group, a.resource, ns, name}) > 0) return true;
    }
  }
  return false;
}

TEST_CASE("the RBAC rules allow every request fracpack makes, and every rule is used") {
  auto rig_binary = require_kube_rig();
  if (!rig_binary) return;
  Dir dir;
  // One node with two GPUs, a Queue, the reservation namespace, and fracpack's own pod to label.
  json objects = json::array({nvf("gpu-0", 2, 81920).obj, queue_object("team-a", "", -1),
                              json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "fracpack-system"}}}},
                              json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-a"}}}},
                              json{{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "inference"}}}, {"value", 125}}});
  json self = kube_pod("fracpack-0");
  self["metadata"]["namespace"] = "fracpack-system";
  self["spec"]["nodeName"] = "gpu-0";
  objects.push_back(self);
  for (const auto& [name, gpus] : std::vector<std::pair<std::string, int>>{{"whole", 1}, {"late", 1}}) {
    json p = kube_pod(name, R"({})");
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    objects.push_back(p);
  }
  objects.push_back(kube_pod("fraction", R"({"gpu-memory": "16384"})"));
  const auto file = dir.path / "objects.json";
  std::ofstream(file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}}.dump();
  const int rig_port = free_port();
  KubeRig rig(*rig_binary, rig_port, "", {(kDeploy / "05-gpu-reservation.yaml").string(), file.string()}, dir.path, {"--log-requests"});
  DeviceAgent agent(rig);
  ::setenv("POD_NAME", "fracpack-0", 1);
  ::setenv("POD_NAMESPACE", "fracpack-system", 1);
  const int port = free_port();
  ServerProcess fracpack(FRACPACK_BINARY,
                         {"--kube-api", rig.url(), "--state", ":memory:", "--leader-elect", "--leader-elect-resource-namespace",
                          "fracpack-system", "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2",
                          "--leader-elect-retry-period", "0.5"},
                         port, (dir.path / "fracpack.log").string());
  ::unsetenv("POD_NAME");
  ::unsetenv("POD_NAMESPACE");
  httplib::Client c("127.0.0.1", port);
  REQUIRE(KubeRig::wait_until([&] { auto r = c.Get("/readyz"); return r && r->status == 200; }, std::chrono::seconds(20)));
  auto schedule = [&](const std::string& name) {
    const json pod = rig.pod("team-a/" + name);
    auto f = c.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"gpu-0"}}}.dump(), "application/json");
    REQUIRE(f);
    if (json::parse(f->body)["NodeNames"].empty()) return false;
    // As kube-scheduler does: a Bind refused while the new leader lists pods again is retried.
    std::string error = "not tried";
    KubeRig::wait_until([&] {
      auto b = c.Post("/bind", json{{"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", pod["metadata"]["uid"]}, {"Node", "gpu-0"}}.dump(),
                      "application/json");
      error = b ? json::parse(b->body).value("Error", "no Error field") : "no answer";
      return error.empty();
    }, std::chrono::seconds(10));
    CHECK_MESSAGE(error.empty(), error);
    return true;
  };
  // Leading (the Lease created, then renewed; the pod labelled), binding a whole GPU and a
  // fraction (its reservation pod created, reported, its pod annotated), refusing a pod, then
  // touching it when a deletion frees room, and deleting the reservation pod once its GPU is idle.
  REQUIRE(KubeRig::wait_until([&] { return rig.pod("fracpack-system/fracpack-0")["metadata"]["labels"].value("fracpack.io/leader", "") == "true"; },
                              std::chrono::seconds(10)));
  REQUIRE(schedule("whole"));
  REQUIRE(schedule("fraction"));
  CHECK_FALSE(schedule("late"));
  REQUIRE(rig.delete_pod("team-a/whole") == 200);
  REQUIRE(KubeRig::wait_until([&] { return rig.pod("team-a/late")["metadata"]["annotations"].contains("fracpack.io/retry"); },
                              std::chrono::seconds(10)));
  REQUIRE(rig.delete_pod("team-a/fraction") == 200);
  REQUIRE(KubeRig::wait_until([&] { return rig.get("/api/v1/namespaces/kai-resource-reservation/pods")["items"].empty(); },
                              std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // renewals: the Lease updated, every 0.5 s
  fracpack.kill9();

  // Every request in kube-rig's log but the test's own and the device agent's. kube-rig logs a
  // request when it ends: the watches open at the kill are logged once kube-rig sees their
  // connections close, so the log is read again until every rule shows or 10 s pass.
  const std::regex line(R"(kube-rig: (GET|POST|PUT|PATCH|DELETE) (\S+) -> (\d+))");
  const std::set<Access> rules = granted();
  std::set<Access> used;
  std::vector<std::string> disallowed;
  auto read_log = [&] {
    used.clear();
    disallowed.clear();
    std::ifstream in(rig.log());
    for (std::string text; std::getline(in, text);) {
      std::smatch m;
      if (!std::regex_search(text, m, line)) continue;
      const std::string method = m[1], uri = m[2];
      const bool test_or_agent = (uri.rfind("/api/v1/namespaces/kai-resource-reservation/pods", 0) == 0 && (method == "GET" || method == "PATCH")) ||
                                 uri.find("agent=device-agent") != std::string::npos;  // the kubelet's part (DeviceAgent)
      const bool test_reads = method == "GET" && (uri.rfind("/api/v1/namespaces/team-a/pods/", 0) == 0 ||
                                                  uri.rfind("/api/v1/namespaces/fracpack-system/pods/", 0) == 0);
      const bool test_deletes = method == "DELETE" && uri.rfind("/api/v1/namespaces/team-a/pods/", 0) == 0;
      if (test_or_agent || test_reads || test_deletes) continue;
      const auto a = access_of(method, uri);
      if (!a) continue;
      if (!allowed(rules, *a)) disallowed.push_back(fmt::format("{} {} ({})", method, uri, a->text()));
      used.insert(*a);
    }
  };
  auto used_rule = [&](const Access& rule) {
    return std::any_of(used.begin(), used.end(), [&](const Access& a) {
      return a.verb == rule.verb && a.group == rule.group && a.resource == rule.resource && (rule.ns.empty() || a.ns == rule.ns) &&
             (rule.name == "*" || a.name == rule.name);
    });
  };
  KubeRig::wait_until([&] {
    read_log();
    return std::all_of(rules.begin(), rules.end(), [&](const Access& r) { return (r.verb == "get" && r.resource == "pods") || used_rule(r); });
  }, std::chrono::seconds(10));
  for (const auto& d : disallowed) FAIL_CHECK("fracpack made a request its RBAC does not allow: " << d);
  // Every rule was needed. `get pods` is for two paths this scenario does not take (a Bind whose
  // outcome is unknown, a bind the watch does not show in time ask for the pod); the test's own
  // GETs of pods are excluded above, so it is not counted either way.
  for (const auto& rule : rules) {
    if (rule.verb == "get" && rule.resource == "pods") continue;
    const bool seen = used_rule(rule);
    CHECK_MESSAGE(seen, "RBAC grants what fracpack never asked for: ", rule.text());
  }
}

}  // namespace
}  // namespace fracpack::test
