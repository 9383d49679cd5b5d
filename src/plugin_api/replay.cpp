#include <chrono>
#include <algorithm>
#include <cstdio>
#include <map>

#include <httplib.h>
#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/serve.hpp"

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

}  // namespace

int replay(const ReplayOptions& options) {
  auto objects = k8s::read_objects_file(options.pods_file);
  if (!objects) {
    fmt::print(stderr, "fracpack replay: {}\n", objects.status().message());
    return 2;
  }
  std::vector<json> pods;
  for (auto& o : *objects) {
    if (k8s::kind_of(o) == "Pod" && !(o.contains("spec") && o["spec"].is_object() && o["spec"].contains("nodeName"))) {
      pods.push_back(std::move(o));
    }
  }
  httplib::Client client(options.server);
  client.set_read_timeout(30, 0);
  auto snapshot = client.Get("/snapshot");
  if (!snapshot || snapshot->status != 200) {
    fmt::print(stderr, "fracpack replay: cannot reach {} ({})\n", options.server,
               snapshot ? fmt::format("HTTP {}", snapshot->status) : httplib::to_string(snapshot.error()));
    return 2;
  }
  const json state = json::parse(snapshot->body, nullptr, false);
  std::vector<std::string> nodes;
  if (state.is_object() && state.contains("nodes")) {
    for (const auto& n : state["nodes"]) nodes.push_back(n["name"].get<std::string>());
  }

  std::size_t placed = 0;
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const json& pod = pods[i];
    const std::string ns = pod["metadata"].value("namespace", std::string("default"));
    const std::string name = pod["metadata"].value("name", std::string());
    auto post = [&](const char* path, const json& body) -> std::optional<json> {
      auto res = client.Post(path, body.dump(), "application/json");
      if (!res || res->status != 200) return std::nullopt;
      return json::parse(res->body, nullptr, false);
    };
    std::string outcome;
    auto filtered = post("/filter", {{"Pod", pod}, {"NodeNames", nodes}});
    if (!filtered) {
      outcome = "error: /filter failed";
    } else if ((*filtered)["NodeNames"].empty()) {
      // The reason most nodes gave (ties: the first in name order).
      std::map<std::string, int> reasons;
      for (const char* field : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
        for (const auto& [node, why] : (*filtered)[field].items()) ++reasons[why.get<std::string>()];
      }
      auto top = std::max_element(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      outcome = top == reasons.end() ? "not placed: no nodes" : fmt::format("not placed ({} nodes): {}", top->second, top->first);
    } else {
      auto scores = post("/prioritize", {{"Pod", pod}, {"NodeNames", (*filtered)["NodeNames"]}});
      std::string best;
      std::int64_t best_score = -1;
      for (const auto& hs : scores ? *scores : json::array()) {
        const std::int64_t s = hs["Score"].get<std::int64_t>();
        if (s > best_score || (s == best_score && hs["Host"].get<std::string>() < best)) {
          best = hs["Host"].get<std::string>();
          best_score = s;
        }
      }
      auto bound = post("/bind", {{"PodName", name}, {"PodNamespace", ns}, {"PodUID", pod["metadata"].value("uid", std::string())}, {"Node", best}});
      if (bound && (*bound)["Error"] == "") {
        ++placed;
        outcome = "→ " + best;
      } else {
        outcome = fmt::format("not bound: {}", bound ? (*bound)["Error"].get<std::string>() : std::string("/bind failed"));
      }
    }
    lines.push_back(fmt::format("{}/{} {}", ns, name, outcome));
    if (options.progress) draw_progress(i + 1, pods.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& l : lines) fmt::print("{}\n", l);
  fmt::print("{} of {} pods bound in {:.3f} s: {:.0f} pods/s through Filter → Prioritize → Bind\n", placed, pods.size(),
             seconds, seconds > 0 ? static_cast<double>(pods.size()) / seconds : 0.0);
  return 0;
}

}  // namespace fracpack
