// examples/embed: place pods onto a cluster through fracpack's installed public API only.
//
//   place_pods CLUSTER.yaml PODS.yaml [POLICY]
//
// Reads v1 Node objects from CLUSTER.yaml and v1 Pod objects from PODS.yaml (YAML or JSON, one
// document or a List), decodes them the way `fracpack place` does, and places each pod in file
// order through a Ledger (the thread-safe owner of a ClusterState: select and reserve under one
// lock). Prints one line per pod: where it went and on which GPUs, or kube-scheduler's summary of
// why it fits nowhere. Exit 0 when every pod was placed, 1 when one was not, 2 on bad input.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/core/build_info.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"

namespace {

using fracpack::Result;

Result<std::vector<fracpack::NodeSpec>> read_nodes(const std::string& path, const fracpack::DecodeConfig& config) {
  auto objects = fracpack::k8s::read_objects_file(path);
  if (!objects) return objects.status();
  std::vector<fracpack::NodeSpec> nodes;
  for (const auto& object : *objects) {
    if (fracpack::k8s::kind_of(object) != "Node") continue;
    auto node = fracpack::k8s::decode_node(object, config);
    if (!node) return node.status();
    nodes.push_back(std::move(*node));
  }
  return nodes;
}

Result<std::vector<fracpack::PodRequest>> read_pods(const std::string& path, const fracpack::DecodeConfig& config) {
  auto objects = fracpack::k8s::read_objects_file(path);
  if (!objects) return objects.status();
  const fracpack::PriorityClasses classes;  // KAI's built-in train, build, inference ...
  std::vector<fracpack::PodRequest> pods;
  for (const auto& object : *objects) {
    if (fracpack::k8s::kind_of(object) != "Pod") continue;
    auto pod = fracpack::k8s::decode_pod(object, config, classes);
    if (!pod) return pod.status();
    pods.push_back(std::move(*pod));
  }
  return pods;
}

std::string describe(const fracpack::Placement& p) {
  return fmt::format("{} -> {} gpus [{}] ({})", p.pod, p.node, fmt::join(p.choice.gpus, ","),
                     fracpack::gpu_hold_name(p.choice.hold));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: place_pods CLUSTER.yaml PODS.yaml [POLICY]\n");
    return 2;
  }
  const fracpack::DecodeConfig decode;
  auto nodes = read_nodes(argv[1], decode);
  auto pods = nodes ? read_pods(argv[2], decode) : Result<std::vector<fracpack::PodRequest>>(nodes.status());
  auto policy = fracpack::make_policy(argc == 4 ? argv[3] : "pack");
  if (!nodes || !pods || !policy) {
    const fracpack::Status& why = !nodes ? nodes.status() : !pods ? pods.status() : policy.status();
    std::fprintf(stderr, "place_pods: %s\n", why.message().c_str());
    return 2;
  }
  auto state = fracpack::ClusterState::create(std::move(*nodes), fracpack::PlacementConfig{});
  if (!state) {
    std::fprintf(stderr, "place_pods: %s\n", state.status().message().c_str());
    return 2;
  }
  fmt::print("fracpack {}: {} nodes, {} pods, policy {}\n", fracpack::build_info().version,
             state->node_count(), pods->size(), (*policy)->name());
  fracpack::Ledger ledger(std::move(*state));
  int unplaced = 0;
  for (const auto& pod : *pods) {
    const fracpack::PlaceOutcome out = ledger.place(pod, **policy);
    if (out.placement) {
      fmt::print("{}\n", describe(*out.placement));
    } else {
      fmt::print("{} does not fit: {}\n", pod.key(), out.why.summary);
      ++unplaced;
    }
  }
  return unplaced == 0 ? 0 : 1;
}
