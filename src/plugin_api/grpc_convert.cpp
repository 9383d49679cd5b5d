#include "plugin_api/grpc_convert.hpp"

#include <fmt/format.h>

namespace fracpack::api {

void to_proto(const FilterAnswer& answer, v1::ExtenderFilterResult* out) {
  for (const auto& n : answer.passed) out->add_node_names(n);
  for (const auto& [node, why] : answer.failed) (*out->mutable_failed_nodes())[node] = why.str();
  for (const auto& [node, why] : answer.unresolvable) (*out->mutable_failed_and_unresolvable_nodes())[node] = why.str();
}

void to_proto(const BindAnswer& answer, v1::Allocation* out) {
  out->set_pod(answer.pod);
  out->set_node(answer.node);
  out->set_hold(gpu_hold(answer.choice.hold));
  out->set_compute_mode(compute_mode(answer.choice.mode));
  for (int g : answer.choice.gpus) out->add_gpu_indices(g);
  for (MiB m : answer.choice.memory) out->add_gpu_memory_mib(m.count());
  for (int c : answer.choice.compute) out->add_gpu_compute_portion(c);
  for (const auto& [key, value] : answer.annotations) (*out->mutable_annotations())[key] = value;
}

void to_proto(const Explanation& explanation, v1::ExplainResponse* out) {
  out->set_code(fit_code(explanation.code));
  out->set_summary(explanation.summary);
  for (const auto& [node, verdict] : explanation.nodes) {
    auto* v = out->add_nodes();
    v->set_node(node);
    v->set_code(fit_code(verdict.code));
    for (const auto& r : verdict.reasons) {
      auto* reason = v->add_reasons();
      reason->set_category(r.category);
      reason->set_detail(r.detail);
    }
  }
  out->set_nodes_omitted(static_cast<std::int64_t>(explanation.nodes_omitted));
  if (!explanation.consolidation_node.empty()) {
    auto* plan = out->mutable_consolidation();
    plan->set_node(explanation.consolidation_node);
    for (const auto& m : explanation.consolidation_moves) {
      auto* move = plan->add_moves();
      move->set_pod(m.pod);
      move->set_from_node(m.from);
      move->set_to_node(m.to);
    }
  }
}

void to_proto(const LedgerSnapshot& snapshot, v1::SnapshotResponse* out) {
  for (const auto& n : snapshot.nodes) {
    auto* node = out->add_nodes();
    node->set_name(n.name);
    for (const auto& g : n.gpus) {
      auto* gpu = node->add_gpus();
      gpu->set_index(g.index);
      gpu->set_state(gpu_state(g.state));
      gpu->set_memory_mib(g.memory.count());
      gpu->set_used_mib(g.used.count());
      gpu->set_fenced(g.fenced);
      for (const auto& h : g.holders) gpu->add_holders(h);
    }
  }
  for (const auto& b : snapshot.bindings) {
    auto* binding = out->add_bindings();
    binding->set_pod(b.pod);
    binding->set_uid(b.uid);
    binding->set_node(b.node);
    for (int g : b.gpus) binding->add_gpu_indices(g);
    binding->set_standing(b.standing);
    binding->set_note(b.note);
    binding->set_ours(b.ours);
    binding->set_gpus_guessed(b.gpus_guessed);
    binding->set_assumed(b.assumed);
  }
  for (const auto& q : snapshot.queues) {
    auto* queue = out->add_queues();
    queue->set_name(q.name);
    queue->set_gpu_allocated(q.gpu_allocated);
    queue->set_gpu_allocated_non_preemptible(q.gpu_allocated_non_preemptible);
    queue->set_gpu_fair_share(q.gpu_fair_share);
  }
}

v1::FitCode fit_code(Code code) {
  switch (code) {
    case Code::kOk: return v1::FIT_CODE_SUCCESS;
    case Code::kUnschedulable: return v1::FIT_CODE_UNSCHEDULABLE;
    case Code::kUnschedulableAndUnresolvable: return v1::FIT_CODE_UNSCHEDULABLE_AND_UNRESOLVABLE;
    default: return v1::FIT_CODE_UNSPECIFIED;
  }
}

v1::GpuHold gpu_hold(GpuHold hold) {
  switch (hold) {
    case GpuHold::kNone: return v1::GPU_HOLD_NONE;
    case GpuHold::kWhole: return v1::GPU_HOLD_WHOLE;
    case GpuHold::kFraction: return v1::GPU_HOLD_FRACTION;
    case GpuHold::kSlot: return v1::GPU_HOLD_SLOT;
  }
  return v1::GPU_HOLD_UNSPECIFIED;
}

v1::ComputeMode compute_mode(ComputeMode mode) {
  switch (mode) {
    case ComputeMode::kTimeSlicing: return v1::COMPUTE_MODE_TIME_SLICING;
    case ComputeMode::kSmSharing: return v1::COMPUTE_MODE_SM_SHARING;
  }
  return v1::COMPUTE_MODE_UNSPECIFIED;
}

v1::GpuState gpu_state(GpuState state) {
  switch (state) {
    case GpuState::kIdle: return v1::GPU_STATE_IDLE;
    case GpuState::kWhole: return v1::GPU_STATE_WHOLE;
    case GpuState::kSharedTimeSlicing: return v1::GPU_STATE_SHARED_TIME_SLICING;
    case GpuState::kSharedSmSharing: return v1::GPU_STATE_SHARED_SM_SHARING;
  }
  return v1::GPU_STATE_UNSPECIFIED;
}

}  // namespace fracpack::api
