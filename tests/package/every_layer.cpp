// Links one entry point of each installed layer above core (queues, sim, server; examples/embed
// covers core): the package job builds it against the installed package with find_package and
// with pkg-config, so every exported target and every .pc file is linked once.
#include <cstdio>

#include <fracpack/k8s/object_stream.hpp>
#include <fracpack/queues/queue_tree.hpp>
#include <fracpack/server/extender.hpp>
#include <fracpack/sim/quota/objective.hpp>

int main() {
  auto tree = fracpack::queues::QueueTree::build({});
  auto objective = fracpack::quota::parse_objective("maximise allocation", {"a"}, {1.0});
  auto extender = fracpack::Extender::open(fracpack::ExtenderOptions{});  // ":memory:" state
  if (!tree || !objective || !extender) {
    std::fprintf(stderr, "every_layer: a layer refused its simplest input\n");
    return 1;
  }
  auto node = fracpack::k8s::read_objects(
      R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}}})",
      "node.json");
  if (!node || !(*extender)->apply(*node, nullptr).is_ok()) {
    std::fprintf(stderr, "every_layer: the server refused a node\n");
    return 1;
  }
  std::printf("every_layer: queues, sim and server linked; the server holds %zu node(s)\n",
              (*extender)->snapshot().nodes.size());
  return 0;
}
