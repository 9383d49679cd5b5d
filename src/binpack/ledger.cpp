#include "fracpack/binpack/ledger.hpp"

namespace fracpack {

PlaceOutcome place_pod(ClusterState& state, const PodRequest& pod, const Policy& policy, const NodeMask* mask,
                       std::size_t detailed, ExplainCache* cache) {
  PlaceOutcome out;
  auto best = select(state, pod, policy, mask);
  if (!best) {
    out.why = cache != nullptr && mask == nullptr ? cache->explain(state, pod, detailed) : explain(state, pod, mask, detailed);
    return out;
  }
  Status st = state.reserve(pod, best->node, best->choice);
  if (!st.is_ok()) {  // select() only proposes what fits; this would be a core bug
    out.why.code = Code::kInternal;
    out.why.summary = st.message();
    return out;
  }
  out.placement = Placement{pod.key(), state.node(best->node).name, state.allocation(pod.key())->choice, best->score};
  return out;
}

PlaceOutcome Ledger::place(const PodRequest& pod, const Policy& policy) {
  std::unique_lock lock(mu_);
  return place_pod(state_, pod, policy);
}

std::vector<PlaceOutcome> Ledger::place_gang(const Gang& gang, const Policy& policy) {
  std::unique_lock lock(mu_);
  return fracpack::place_gang(state_, gang, policy);
}

Status Ledger::reserve(const PodRequest& pod, std::string_view node, const std::vector<int>& gpus) {
  std::unique_lock lock(mu_);
  auto n = state_.find_node(node);
  if (!n) return {Code::kNotFound, fmt::format("pod {}: node {} does not exist", pod.key(), node)};
  GpuChoice choice;
  choice.gpus = gpus;
  return state_.reserve(pod, *n, choice);
}

bool Ledger::release(const std::string& pod_key) {
  std::unique_lock lock(mu_);
  return state_.release(pod_key);
}

}  // namespace fracpack
