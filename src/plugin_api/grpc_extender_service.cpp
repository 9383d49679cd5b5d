// fracpack.v1.Extender: Filter, Prioritize, Bind, Preempt over the extender core.
#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"

#include "plugin_api/bind_path.hpp"
#include "plugin_api/decision_log.hpp"
#include "plugin_api/grpc_convert.hpp"
#include "plugin_api/grpc_services.hpp"
#include "plugin_api/grpc_status.hpp"
#include "plugin_api/metrics.hpp"
#include "plugin_api/node_learning.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

/// ExtenderArgs' candidates by name, views into `args` or into `owned` (the names of full nodes);
/// full nodes the core does not know yet are learned.
Result<std::vector<std::string_view>> candidates(Extender& core, const v1::ExtenderArgs& args, std::vector<std::string>& owned,
                                                 std::map<std::string, std::string>* rejected = nullptr) {
  if (args.all_nodes()) {
    return Status(Code::kInvalidArgument, "ExtenderArgs: all_nodes applies to Filter; Prioritize scores the nodes Filter passed (node_names)", "all_nodes");
  }
  if (args.max_nodes() != 0) return Status(Code::kInvalidArgument, "ExtenderArgs: max_nodes applies with all_nodes", "max_nodes");
  if (args.node_names_size() > 0 && args.nodes_size() > 0) {
    return Status(Code::kInvalidArgument, "ExtenderArgs: give node_names (nodeCacheCapable) or nodes, not both", "nodes");
  }
  if (args.node_names_size() == 0 && args.nodes_size() == 0) {
    return Status(Code::kInvalidArgument, "ExtenderArgs: no candidate nodes; give node_names or nodes", "node_names");
  }
  if (args.node_names_size() > 0) return std::vector<std::string_view>(args.node_names().begin(), args.node_names().end());
  std::vector<std::string>& names = owned;
  std::vector<json> objects;
  for (int i = 0; i < args.nodes_size(); ++i) {
    const std::string field = fmt::format("nodes[{}]", i);
    auto node = parse_object(args.nodes(i), field);
    if (!node) return node.status();
    std::string name = k8s::metadata_string(*node, "name");
    if (name.empty()) return Status(Code::kInvalidArgument, fmt::format("{}: a v1 Node needs metadata.name", field), field);
    names.push_back(std::move(name));
    objects.push_back(std::move(*node));
  }
  std::vector<const json*> pointers;
  for (const auto& o : objects) pointers.push_back(&o);
  const auto views = fracpack::views(names);
  auto refused = learn_nodes(core, views, pointers);
  if (rejected != nullptr) *rejected = std::move(refused);
  return views;
}

Status required(const std::string& value, const char* field, const char* message) {
  if (!value.empty()) return Status::ok();
  return {Code::kInvalidArgument, fmt::format("{}: {} is empty", message, field), field};
}

}  // namespace

grpc::Status ExtenderService::filter(const v1::ExtenderArgs* args, v1::ExtenderFilterResult* out) {
  auto parsed = pods_.parse(args->pod(), "pod");
  if (!parsed) return to_grpc(parsed.status());
  const json* pod = parsed->get();
  const Timer timer;
  Result<FilterAnswer> answer = Status(Code::kInternal, "filter: no answer");
  std::size_t considered = 0;  // nodes the answer speaks of, for the decision log
  if (args->all_nodes()) {
    if (args->node_names_size() > 0 || args->nodes_size() > 0) {
      return to_grpc({Code::kInvalidArgument, "ExtenderArgs: all_nodes replaces node_names and nodes; give one", "all_nodes"});
    }
    if (args->max_nodes() < 0) return to_grpc({Code::kInvalidArgument, "ExtenderArgs: max_nodes must be ≥ 0 (0: all)", "max_nodes"});
    answer = core_.filter_all(*pod, static_cast<std::size_t>(args->max_nodes()));
    if (answer) considered = answer->passed.size() + answer->failed.size() + answer->unresolvable.size();
  } else {
    std::map<std::string, std::string> rejected;
    std::vector<std::string> owned;
    auto nodes = candidates(core_, *args, owned, &rejected);
    if (!nodes) return to_grpc(nodes.status());
    considered = nodes->size();
    answer = core_.filter(*pod, *nodes);
    if (answer) with_rejections(*answer, rejected);
  }
  if (answer) metrics_.unschedulable(answer->refused_by);
  log_filter(*pod, answer, considered, timer.seconds());
  if (!answer) return to_grpc(answer.status(), "pod");
  to_proto(*answer, out);
  return grpc::Status::OK;
}

grpc::Status ExtenderService::prioritize(const v1::ExtenderArgs* args, v1::HostPriorityList* out) {
  auto parsed = pods_.parse(args->pod(), "pod");
  if (!parsed) return to_grpc(parsed.status());
  const json* pod = parsed->get();
  std::vector<std::string> owned;
  auto nodes = candidates(core_, *args, owned);
  if (!nodes) return to_grpc(nodes.status());
  auto scores = core_.prioritize(*pod, *nodes);
  if (!scores) return to_grpc(scores.status(), "pod");
  for (const auto& s : *scores) {
    auto* hp = out->add_host_priorities();
    hp->set_host(s.host);
    hp->set_score(s.score);
  }
  return grpc::Status::OK;
}

grpc::Status ExtenderService::bind(const v1::ExtenderBindingArgs* args, v1::ExtenderBindingResult* out) {
  for (const auto& [value, field] : {std::pair{&args->pod_name(), "pod_name"}, {&args->pod_namespace(), "pod_namespace"},
                                     {&args->node(), "node"}}) {
    if (Status st = required(*value, field, "ExtenderBindingArgs"); !st.is_ok()) return to_grpc(st);
  }
  const Timer timer;
  auto bound = bind_pod(core_, binder_, metrics_, args->pod_namespace(), args->pod_name(), args->pod_uid(), args->node());
  log_bind(args->pod_namespace() + "/" + args->pod_name(), args->node(), bound, timer.seconds());
  if (!bound) return to_grpc(bound.status());
  to_proto(*bound, out->mutable_allocation());
  return grpc::Status::OK;
}

grpc::Status ExtenderService::preempt(const v1::ExtenderPreemptionArgs* args, v1::ExtenderPreemptionResult* out) {
  auto parsed = pods_.parse(args->pod(), "pod");
  if (!parsed) return to_grpc(parsed.status());
  const json* pod = parsed->get();
  std::map<std::string, std::vector<std::string>> offered;
  for (const auto& [node, victims] : args->node_name_to_victims()) {
    offered[node] = std::vector<std::string>(victims.pod_uids().begin(), victims.pod_uids().end());
  }
  auto answer = core_.preempt(*pod, offered);
  if (!answer) return to_grpc(answer.status(), "pod");
  for (const auto& [node, uids] : *answer) {
    auto& victims = (*out->mutable_node_name_to_victims())[node];
    for (const auto& u : uids) victims.add_pod_uids(u);
  }
  return grpc::Status::OK;
}

}  // namespace fracpack::api
