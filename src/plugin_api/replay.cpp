// `fracpack replay`: drives a running server like kube-scheduler does, one pod at a time.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/progress.hpp"
#include "fracpack/server/serve.hpp"
#include "plugin_api/client.hpp"
#include "plugin_api/flag_files.hpp"

namespace fracpack {
namespace {

using nlohmann::json;

/// kube-scheduler's own wording for a pod that fits nowhere: "0/N nodes are available: 5 x, 3 y."
/// with each reason counted over the nodes, most frequent first.
std::string unschedulable_summary(const api::FilterReply& reply) {
  std::map<std::string, int> counts;
  std::size_t nodes = 0;
  for (const auto* failed : {&reply.failed_nodes, &reply.failed_and_unresolvable_nodes}) {
    for (const auto& [node, why] : *failed) {  // counted whole, as kube-scheduler counts them
      ++nodes;
      ++counts[why.str()];
    }
  }
  std::vector<std::pair<int, std::string>> parts;
  for (const auto& [why, count] : counts) parts.emplace_back(-count, why);
  std::sort(parts.begin(), parts.end());
  std::string out = fmt::format("not placed: 0/{} nodes are available", nodes);
  for (std::size_t i = 0; i < parts.size(); ++i) out += fmt::format("{} {} {}", i == 0 ? ":" : ",", -parts[i].first, parts[i].second);
  return out + ".";
}

/// metadata.<field> when it is a string, else `fallback` (a hostile file must not stop the replay).
std::string meta_string(const json& pod, const char* field, const char* fallback) {
  std::string value = k8s::metadata_string(pod, field);
  return value.empty() ? std::string(fallback) : value;
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
  const std::string ns = meta_string(pod, "namespace", "default");
  const std::string name = meta_string(pod, "name", "");
  const std::string pod_json = pod.dump();
  auto filtered = client.filter(pod_json, nodes);
  if (!filtered) {
    // A pod the server rejects as invalid is the pod's fault; anything else is the transport's.
    const bool invalid = filtered.status().code() == Code::kInvalidArgument;
    return {fmt::format("{}: {}", invalid ? "rejected" : "error: filter", filtered.status().message()), false};
  }
  if (filtered->node_names.empty()) return {unschedulable_summary(*filtered), false};
  auto scores = client.prioritize(pod_json, filtered->node_names);
  if (!scores) return {fmt::format("error: prioritize: {}", scores.status().message()), false};
  const std::string best = best_host(*scores);
  if (Status st = client.bind(ns, name, meta_string(pod, "uid", ""), best); !st.is_ok()) {
    return {fmt::format("not bound: {}", st.message()), false};
  }
  return {"→ " + best, true};
}

}  // namespace

int replay(const ReplayOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);  // a server that closed its end is an error to report, not a kill
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
  std::string token;
  if (!options.token_file.empty()) {
    auto text = api::read_flag_file(options.token_file, "--token-file");
    if (!text) {
      fmt::print(stderr, "fracpack replay: {}\n", text.status().message());
      return 2;
    }
    token = text->substr(0, text->find_first_of("\r\n"));
  }
  auto client = api::connect(options.server, {options.tls_ca, options.tls_cert, options.tls_key, token});
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
  ProgressBar bar("pods");
  for (std::size_t i = 0; i < pods.size(); ++i) {
    auto [outcome, bound] = schedule(**client, pods[i], *nodes);
    placed += bound ? 1 : 0;
    lines.push_back(fmt::format("{}/{} {}", meta_string(pods[i], "namespace", "default"), meta_string(pods[i], "name", ""), outcome));
    if (options.progress) bar.update(i + 1, pods.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& l : lines) fmt::print("{}\n", l);
  fmt::print("{} of {} pods bound in {:.3f} s: {:.0f} pods/s through Filter → Prioritize → Bind\n", placed, pods.size(),
             seconds, seconds > 0 ? static_cast<double>(pods.size()) / seconds : 0.0);
  return 0;
}

}  // namespace fracpack
