// `fracpack replay`: drives a running server like kube-scheduler does, one pod at a time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/serve.hpp"
#include "plugin_api/client.hpp"

namespace fracpack {
namespace {

using nlohmann::json;

void draw_progress(std::size_t done, std::size_t total) {
  constexpr int kWidth = 40;
  const int filled = total == 0 ? kWidth : static_cast<int>(kWidth * done / total);
  fmt::print(stderr, "\r[{}{}] {}/{}", std::string(static_cast<std::size_t>(filled), '='),
             std::string(static_cast<std::size_t>(kWidth - filled), ' '), done, total);
  if (done == total) fmt::print(stderr, "\n");
}

/// The reason most nodes gave (ties: the first in reason order).
std::string top_reason(const api::FilterReply& reply) {
  std::map<std::string, int> reasons;
  for (const auto* failed : {&reply.failed_nodes, &reply.failed_and_unresolvable_nodes}) {
    for (const auto& [node, why] : *failed) ++reasons[why];
  }
  auto top = std::max_element(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return top == reasons.end() ? "not placed: no nodes" : fmt::format("not placed ({} nodes): {}", top->second, top->first);
}

/// The best-scored host; ties go to the first in name order, so a replay is deterministic.
std::string best_host(const std::vector<api::HostScore>& scores) {
  const api::HostScore* best = nullptr;
  for (const auto& s : scores) {
    if (best == nullptr || s.score > best->score || (s.score == best->score && s.host < best->host)) best = &s;
  }
  return best == nullptr ? std::string() : best->host;
}

/// One pod through Filter → Prioritize → Bind; the line to print, and whether it was bound.
std::pair<std::string, bool> schedule(api::ExtenderClient& client, const json& pod, const std::vector<std::string>& nodes) {
  const json& meta = pod["metadata"];
  const std::string ns = meta.value("namespace", std::string("default"));
  const std::string name = meta.value("name", std::string());
  const std::string pod_json = pod.dump();
  auto filtered = client.filter(pod_json, nodes);
  if (!filtered) {
    // A pod the server rejects as invalid is the pod's fault; anything else is the transport's.
    const bool invalid = filtered.status().code() == Code::kInvalidArgument;
    return {fmt::format("{}: {}", invalid ? "rejected" : "error: filter", filtered.status().message()), false};
  }
  if (filtered->node_names.empty()) return {top_reason(*filtered), false};
  auto scores = client.prioritize(pod_json, filtered->node_names);
  if (!scores) return {fmt::format("error: prioritize: {}", scores.status().message()), false};
  const std::string best = best_host(*scores);
  if (Status st = client.bind(ns, name, meta.value("uid", std::string()), best); !st.is_ok()) {
    return {fmt::format("not bound: {}", st.message()), false};
  }
  return {"→ " + best, true};
}

}  // namespace

int replay(const ReplayOptions& options) {
  auto objects = k8s::read_objects_file(options.pods_file);
  if (!objects) {
    fmt::print(stderr, "fracpack replay: {}\n", objects.status().message());
    return 2;
  }
  std::vector<json> pods;
  for (auto& o : *objects) {
    const bool bound = o.contains("spec") && o["spec"].is_object() && o["spec"].contains("nodeName");
    if (k8s::kind_of(o) == "Pod" && !bound && o.contains("metadata") && o["metadata"].is_object()) pods.push_back(std::move(o));
  }
  auto client = api::connect(options.server, {options.tls_ca, options.tls_cert, options.tls_key});
  if (!client) {
    fmt::print(stderr, "fracpack replay: {}\n", client.status().message());
    return 2;
  }
  auto nodes = (*client)->node_names();
  if (!nodes) {
    fmt::print(stderr, "fracpack replay: cannot reach {}: {}\n", options.server, nodes.status().message());
    return 2;
  }

  std::size_t placed = 0;
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const json& meta = pods[i]["metadata"];
    auto [outcome, bound] = schedule(**client, pods[i], *nodes);
    placed += bound ? 1 : 0;
    lines.push_back(fmt::format("{}/{} {}", meta.value("namespace", std::string("default")), meta.value("name", std::string()), outcome));
    if (options.progress) draw_progress(i + 1, pods.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& l : lines) fmt::print("{}\n", l);
  fmt::print("{} of {} pods bound in {:.3f} s: {:.0f} pods/s through Filter → Prioritize → Bind\n", placed, pods.size(),
             seconds, seconds > 0 ? static_cast<double>(pods.size()) / seconds : 0.0);
  return 0;
}

}  // namespace fracpack
