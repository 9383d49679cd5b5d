// The ledger compared with the API server's pods (Extender::verify_against; /debug/verify): what
// kube-scheduler's cache comparer does for its cache, for fracpack's ledger and its reservation
// pods. A replica whose ledger drifted from the objects (a pod held on other GPUs than the ones
// its Binding named, a reservation pod on another index than it says, a running fraction whose
// GPU no reservation pod holds) says so here, on a follower as on the leader.
#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fracpack/core/labels.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

std::string text_at(const json& object, const char* pointer) {
  const json::json_pointer p(pointer);
  return object.contains(p) && object[p].is_string() ? object[p].get<std::string>() : std::string();
}

bool finished_pod(const json& pod) {
  const std::string phase = text_at(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

std::string listed_pod_key(const json& pod) {
  const std::string ns = k8s::metadata_string(pod, "namespace");
  return (ns.empty() ? "default" : ns) + "/" + k8s::metadata_string(pod, "name");
}

/// "0,3" → {0, 3}; nullopt unless every item is an index.
std::optional<std::vector<int>> indices(const std::string& text) {
  std::vector<int> out;
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    int v = -1;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
    if (ec != std::errc() || end != text.data() + comma || v < 0) return std::nullopt;
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

/// Running fractions' GPU groups, and the reservation pods there are: group → node.
struct GroupsSeen {
  std::map<std::string, std::string> reserved;  ///< group → node of its reservation pod (not being deleted)
  std::vector<std::pair<std::string, json>> fractions;
};

}  // namespace

ExtenderImpl::RecordedMembers ExtenderImpl::recorded_members(const std::vector<json>& pods) const {
  RecordedMembers out;
  if (!book_) return out;
  for (const json& p : pods) {
    if (!p.is_object() || finished_pod(p) || !book_->is_reservation(p)) continue;
    if (text_at(p, "/metadata/annotations/fracpack.io~1reservation-owner") != book_->options().owner) continue;
    const auto index = indices(text_at(p, "/metadata/annotations/fracpack.io~1gpu"));
    if (!index || index->size() != 1 || !p["metadata"]["annotations"].is_object()) continue;
    for (const auto& [k, v] : p["metadata"]["annotations"].items()) {
      if (k.starts_with(kReservationMemberPrefix)) out[k.substr(kReservationMemberPrefix.size())][text_at(p, "/spec/nodeName")].push_back(index->front());
    }
  }
  return out;
}

std::vector<std::string> ExtenderImpl::verify_against(const std::vector<json>& pods) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  std::set<std::string> bound;
  GroupsSeen groups;
  const RecordedMembers recorded = recorded_members(pods);
  for (const json& p : pods) {
    if (!p.is_object() || finished_pod(p)) continue;
    const std::string key = listed_pod_key(p);
    if (book_ && book_->is_reservation(p)) {
      compare_reservation(p, out);
      if (!p["metadata"].contains("deletionTimestamp")) groups.reserved[gpu_groups(p).front()] = text_at(p, "/spec/nodeName");
      continue;
    }
    const std::string node = text_at(p, "/spec/nodeName");
    if (node.empty()) {
      const Allocation* a = state_.cluster().allocation(key);
      const PodRecord* r = state_.pod(key);
      if (a != nullptr && !assumed_.contains(key) && !(r != nullptr && r->planned_until)) {
        out.push_back(fmt::format("pod {}: pending in the API server, held on node {} here", key, state_.cluster().node(a->node).name));
      }
      continue;
    }
    bound.insert(key);
    compare_bound(key, node, p, recorded, out);
    if (book_ && !bound_gpu_groups(p).empty()) groups.fractions.emplace_back(key, p);
  }
  const std::string reservations = book_ ? book_->key("") : std::string();  // "namespace/": reservation pods hold idle GPUs
  for (const std::string& key : state_.cluster().allocated_pods()) {
    if (bound.contains(key) || assumed_.contains(key) || (book_ && key.starts_with(reservations))) continue;
    const PodRecord* r = state_.pod(key);
    if (r != nullptr && r->planned_until) continue;  // held for its gang's plan, not bound yet
    out.push_back(fmt::format("pod {}: held on node {} here, not bound in the API server", key,
                              state_.cluster().node(state_.cluster().allocation(key)->node).name));
  }
  for (const auto& [key, p] : groups.fractions) {
    for (const std::string& group : bound_gpu_groups(p)) {
      auto at = groups.reserved.find(group);
      if (at == groups.reserved.end() || at->second != text_at(p, "/spec/nodeName")) {
        out.push_back(fmt::format("pod {}: runs in GPU group {}, which has no reservation pod on its node in the API server", key, group));
      }
    }
  }
  return out;
}

void ExtenderImpl::compare_bound(const std::string& key, const std::string& node, const json& pod, const RecordedMembers& recorded,
                                 std::vector<std::string>& out) const {
  const Allocation* a = state_.cluster().allocation(key);
  const PodRecord* r = state_.pod(key);
  if (a == nullptr) {
    if (r == nullptr || r->standing != PodStanding::kWaitingForNode) {
      out.push_back(fmt::format("pod {}: bound to node {} in the API server, not held here", key, node));
    }
    return;
  }
  const std::string& held_on = state_.cluster().node(a->node).name;
  const std::string uid = k8s::metadata_string(pod, "uid");
  if (held_on != node || (r != nullptr && !uid.empty() && !r->raw.uid.empty() && r->raw.uid != uid)) {
    out.push_back(fmt::format("pod {}: bound to node {} (uid {}) in the API server, held on node {} (uid {}) here", key, node, uid, held_on,
                              r != nullptr ? r->raw.uid : std::string()));
    return;
  }
  if (compare_recorded(key, node, uid, *a, recorded, out)) return;
  const std::string named = text_at(pod, "/metadata/annotations/fracpack.io~1gpus");
  if (named.empty() || a->holder == Holder::kConflict || claim_edits_.contains(key)) return;  // guessed, fenced, or an edit refused
  if (auto gpus = indices(named); gpus && *gpus != a->choice.gpus) {
    out.push_back(fmt::format("pod {}: holds GPUs [{}] of node {} here; its {} says {}", key, fmt::join(a->choice.gpus, ","), node,
                              k8s::kLedgerGpusAnnotation, named));
  }
}

bool ExtenderImpl::compare_recorded(const std::string& key, const std::string& node, const std::string& uid, const Allocation& a,
                                    const RecordedMembers& members, std::vector<std::string>& out) const {
  if (uid.empty() || a.holder == Holder::kConflict) return false;
  const auto of_uid = members.find(uid);
  const auto there = of_uid != members.end() ? of_uid->second.find(node) : std::map<std::string, std::vector<int>>::const_iterator{};
  if (of_uid == members.end() || there == of_uid->second.end()) return false;
  std::vector<int> recorded = there->second;
  std::vector<int> held = a.choice.gpus;
  std::sort(held.begin(), held.end());
  std::sort(recorded.begin(), recorded.end());
  if (held != recorded) {
    out.push_back(fmt::format("pod {}: holds GPUs [{}] of node {} here; its reservation pods record it a member on GPUs [{}]", key,
                              fmt::join(held, ","), node, fmt::join(recorded, ",")));
  }
  return true;
}

void ExtenderImpl::compare_reservation(const json& pod, std::vector<std::string>& out) const {
  const std::string name = k8s::metadata_string(pod, "name");
  const std::string node = text_at(pod, "/spec/nodeName");
  const std::string group = gpu_groups(pod).front();
  auto e = book_->find(group);
  if (!e || e->pod != name) {
    out.push_back(fmt::format("reservation pod {}: group {} is not its group here", book_->key(name), group));
    return;
  }
  const std::string named = text_at(pod, "/metadata/annotations/fracpack.io~1gpu");
  if (text_at(pod, "/metadata/annotations/fracpack.io~1reservation-owner") != book_->options().owner || named.empty()) return;
  if (e->node != node || std::to_string(e->gpu) != named) {
    out.push_back(fmt::format("reservation pod {}: holds GPU {} of node {} by its {}, GPU {} of node {} here", book_->key(name), named, node,
                              kReservationGpuAnnotation, e->gpu, e->node));
  }
}

}  // namespace fracpack::api
