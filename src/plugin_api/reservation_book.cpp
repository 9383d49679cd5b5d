#include "plugin_api/reservation_book.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <charconv>

#include "fracpack/core/quoting.hpp"

#include "fracpack/k8s/object_stream.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

const json* labels_of(const json& pod) {
  static const json::json_pointer kLabels("/metadata/labels");
  return pod.is_object() && pod.contains(kLabels) && pod[kLabels].is_object() ? &pod[kLabels] : nullptr;
}

std::string string_at(const json& object, const char* pointer) {
  const json::json_pointer p(pointer);
  return object.contains(p) && object[p].is_string() ? object[p].get<std::string>() : std::string();
}

/// Whether reservation pod `a` is newer than `b`: created later (a claim of this process not yet
/// seen is the newest), then by name. The same answer on every replica.
bool newer(const ReservationBook::Entry& a, const ReservationBook::Entry& b) {
  if (a.created != b.created) return a.created.empty() || (!b.created.empty() && a.created > b.created);
  return a.pod > b.pod;
}

/// Which of two of this deployment's reservation pods naming one GPU keeps it: the one whose
/// record names members (fractions were bound behind it), else the newer.
bool outranks(const ReservationBook::Entry& a, const ReservationBook::Entry& b) {
  if (a.members.empty() != b.members.empty()) return !a.members.empty();
  return newer(a, b);
}

/// The members a reservation pod names (kReservationMemberPrefix): uid → "namespace/name".
std::map<std::string, std::string> members_of(const json& pod) {
  static const json::json_pointer kAnnotations("/metadata/annotations");
  std::map<std::string, std::string> out;
  if (!pod.contains(kAnnotations) || !pod[kAnnotations].is_object()) return out;
  for (const auto& [key, value] : pod[kAnnotations].items()) {
    if (key.starts_with(kReservationMemberPrefix) && key.size() > kReservationMemberPrefix.size() && value.is_string()) {
      out.emplace(key.substr(kReservationMemberPrefix.size()), value.get<std::string>());
    }
  }
  return out;
}

/// The ledger index a reservation pod of ours names (fracpack.io/gpu), when it is one of a node of
/// `gpu_count` GPUs (-1: not known yet).
std::optional<int> ledger_index(const json& pod, int gpu_count, const std::string& ns) {
  const std::string text = string_at(pod, "/metadata/annotations/fracpack.io~1gpu");
  int gpu = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), gpu);
  if (ec == std::errc() && end == text.data() + text.size() && gpu >= 0 && gpu <= 4095 && (gpu_count < 0 || gpu < gpu_count)) return gpu;
  spdlog::warn("reservation pod {}/{}: annotation {} = \"{}\" is not a GPU index of its node{}; its GPU is learned as a stranger's", ns,
               k8s::metadata_string(pod, "name"), kReservationGpuAnnotation, excerpt(text),
               gpu_count < 0 ? std::string() : fmt::format(" ({} GPUs)", gpu_count));
  return std::nullopt;
}

}  // namespace

std::vector<std::string> gpu_groups(const json& pod) {
  std::vector<std::string> out;
  const json* labels = labels_of(pod);
  if (labels == nullptr) return out;
  if (auto it = labels->find(std::string(kGpuGroupLabel)); it != labels->end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    out.push_back(it->get<std::string>());
  }
  for (const auto& [key, value] : labels->items()) {
    if (key.starts_with(kGpuGroupLabelPrefix) && value.is_string() && !value.get_ref<const std::string&>().empty()) {
      out.push_back(value.get<std::string>());
    }
  }
  return out;
}

std::vector<std::string> bound_gpu_groups(const json& pod) {
  // fracpack's own annotation first: it keeps the order of the pod's GPUs, which labels do not.
  std::vector<std::string> out;
  const std::string written = string_at(pod, "/metadata/annotations/fracpack.io~1gpu-groups");
  for (std::size_t at = 0; at < written.size();) {
    const auto comma = std::min(written.find(',', at), written.size());
    if (comma > at) out.push_back(written.substr(at, comma - at));
    at = comma + 1;
  }
  return out.empty() ? gpu_groups(pod) : out;
}

json reservation_pod(const GpuReservationOptions& options, const ReservationClaim& claim) {
  const json gpu = {{"nvidia.com/gpu", "1"}};
  auto field_env = [](const char* name, const char* path) {
    return json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
  };
  json pod = {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", claim.pod},
            {"namespace", options.ns},
            {"labels", {{"app", options.app_label}, {std::string(kGpuGroupLabel), claim.group}}},
            {"annotations", {{"karpenter.sh/do-not-disrupt", "true"},
                             {std::string(kReservationOwnerAnnotation), options.owner},
                             {std::string(kReservationGpuAnnotation), std::to_string(claim.gpu)}}}}},
          {"spec",
           {{"nodeName", claim.node},
            {"serviceAccountName", options.service_account},
            {"containers",
             json::array({{{"name", "resource-reservation"},
                           {"image", options.image},
                           {"imagePullPolicy", "IfNotPresent"},
                           {"resources", {{"limits", gpu}, {"requests", gpu}}},
                           {"env", json::array({field_env("POD_NAME", "metadata.name"),
                                                field_env("POD_NAMESPACE", "metadata.namespace")})}}})}}}};
  if (!options.creator.empty()) pod["metadata"]["annotations"][std::string(kReservationCreatorAnnotation)] = options.creator;
  if (!options.runtime_class.empty()) pod["spec"]["runtimeClassName"] = options.runtime_class;
  return pod;
}

ReservationBook::ReservationBook(GpuReservationOptions options) : options_(std::move(options)), random_(std::random_device{}()) {}

std::string ReservationBook::new_group() {
  // A UUID (version 4), as KAI's groups are.
  const std::uint64_t a = random_();
  const std::uint64_t b = random_();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

std::string ReservationBook::new_pod_name(const std::string& node) {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";  // apimachinery's rand.String
  std::string suffix;
  for (int i = 0; i < 5; ++i) suffix += kAlphabet[random_() % (sizeof(kAlphabet) - 1)];
  // gpu-reservation-<node>-<xxxxx> (KAI), within the 253 characters of a pod name.
  return fmt::format("gpu-reservation-{}-{}", node.substr(0, 253 - 22), suffix);
}

ReservationClaim ReservationBook::claim(const std::string& node, int gpu) {
  std::lock_guard lock(mu_);
  if (auto at = at_.find({node, gpu}); at != at_.end()) {
    Entry& e = groups_.at(at->second);
    if (e.deleting && !e.delete_sent) {  // decided, not asked yet: kept after all (its GPU is wanted again)
      e.deleting = false;
      std::erase_if(deletions_, [&](const ReservationDeletion& d) { return d.pod == e.pod; });
    }
    if (e.deleting) return {node, gpu, e.group, e.pod, "", false, /*blocked=*/true};  // going: one at a time
    if (!e.deleting) {
      e.claimed = true;
      const bool create = e.pod.empty();  // a group known from its fractions only: its pod is gone
      if (create) {
        e.pod = new_pod_name(node);
        e.uid.clear();
        e.device.clear();
        e.owner = options_.owner;
        e.creator = options_.creator;
        e.indexed = true;
      }
      return {node, gpu, e.group, e.pod, e.device, create, false};
    }
  }
  Entry e;
  e.group = new_group();
  e.node = node;
  e.gpu = gpu;
  e.indexed = true;
  e.pod = new_pod_name(node);
  e.owner = options_.owner;
  e.creator = options_.creator;
  e.claimed = true;
  e.since = std::chrono::steady_clock::now();
  at_[{node, gpu}] = e.group;
  ReservationClaim out{node, gpu, e.group, e.pod, "", true, false};
  groups_.emplace(e.group, std::move(e));
  return out;
}

Result<std::string> ReservationBook::await_device(const std::string& group, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second.deleting) {
      return Status(Code::kInternal, fmt::format("reservation group {}: its reservation pod was deleted before it reported a GPU", group));
    }
    if (!it->second.device.empty()) return it->second.device;
    if (reported_.wait_until(lock, deadline) == std::cv_status::timeout) {
      it = groups_.find(group);
      if (it != groups_.end() && !it->second.device.empty()) return it->second.device;
      lock.unlock();
      return report_timeout(group);
    }
  }
}

Status ReservationBook::report_timeout(const std::string& group) const {
  std::string pod = group;
  {
    std::lock_guard lock(mu_);
    if (auto it = groups_.find(group); it != groups_.end() && !it->second.pod.empty()) pod = it->second.pod;
  }
  return Status(Code::kInternal, fmt::format("reservation pod {}/{} did not report its GPU (annotation {}) within {} s: is the node's "
                                             "device plugin giving it nvidia.com/gpu, and does its image ({}) run?",
                                             options_.ns, pod, kReservedGpuAnnotation, options_.timeout.count(), options_.image));
}

std::uint64_t ReservationBook::when_reported(const std::string& group, std::function<void(Result<std::string>)> done) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = ++next_waiter_;
  waiters_.push_back({id, group, std::move(done)});
  notify();  // reported or gone already: answered now
  return id;
}

void ReservationBook::forget_waiter(std::uint64_t id) {
  std::lock_guard lock(mu_);
  std::erase_if(waiters_, [&](const Waiter& w) { return w.id == id; });
}

void ReservationBook::notify() {
  reported_.notify_all();
  std::erase_if(waiters_, [&](Waiter& w) {
    auto it = groups_.find(w.group);
    if (it == groups_.end() || it->second.deleting) {
      w.done(Status(Code::kInternal, fmt::format("reservation group {}: its reservation pod is gone (deleted, or never created) before "
                                                 "it reported a GPU", w.group)));
      return true;
    }
    if (it->second.device.empty()) return false;
    w.done(it->second.device);
    return true;
  });
}

void ReservationBook::creation_failed(const ReservationClaim& claim) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(claim.group);
  if (it == groups_.end() || !claim.create || it->second.visible || it->second.pod != claim.pod) return;
  if (it->second.gpu >= 0 && !it->second.device.empty()) return;  // not this claim's to undo
  // No pod (as far as anyone knows: one created after all shows up in the watch as a stranger).
  it->second.pod.clear();
  it->second.deleting = true;  // waiters on this group give up
  notify();
  erase(it);
}

std::vector<ReservationDeletion> ReservationBook::take_deletions() {
  std::lock_guard lock(mu_);
  idle_noted_ = false;
  auto counted_on = [&](const std::string& pod, const std::string& uid) {
    return std::any_of(groups_.begin(), groups_.end(), [&](const auto& g) {
      const Entry& e = g.second;
      return e.pod == pod && !e.deleting && (uid.empty() || e.uid.empty() || e.uid == uid);
    });
  };
  std::vector<ReservationDeletion> out;
  for (auto& d : std::exchange(deletions_, {})) {
    if (counted_on(d.pod, d.uid) || std::find(out.begin(), out.end(), d) != out.end()) continue;
    for (auto& [group, e] : groups_) {
      if (e.pod == d.pod && e.deleting) e.delete_sent = true;  // going from now on: its GPU's claims wait
    }
    out.push_back(std::move(d));
  }
  for (auto& [pod, stray] : strays_) {  // what exists now and no group counts on
    if (stray.asked || counted_on(pod, stray.uid)) continue;
    stray.asked = true;
    out.push_back({pod, stray.uid});
  }
  return out;
}

void ReservationBook::deletion_failed(const ReservationDeletion& deletion) {
  std::lock_guard lock(mu_);
  if (auto stray = strays_.find(deletion.pod); stray != strays_.end()) {
    stray->second.asked = false;  // the leader's next sweep asks again
    return;
  }
  // The pod may be going all the same: its GPU's claims stay blocked, and the DELETE is asked
  // again in this term (a new term decides again: new_term).
  deletions_.push_back(deletion);
}

void ReservationBook::deletion_refused(const ReservationDeletion& deletion) {
  std::lock_guard lock(mu_);
  if (auto stray = strays_.find(deletion.pod); stray != strays_.end() && stray->second.uid == deletion.uid) strays_.erase(stray);
  for (auto& [group, e] : groups_) {
    if (e.pod == deletion.pod && e.deleting) e.deleting = e.delete_sent = false;
  }
}

void ReservationBook::new_term() {
  std::lock_guard lock(mu_);
  term_start_ = std::chrono::steady_clock::now();
  deletions_.clear();
  for (auto& [pod, stray] : strays_) stray.asked = false;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto here = it++;
    Entry& e = here->second;
    if (!e.deleting) continue;
    const auto at = at_.find({e.node, e.gpu});
    const bool holds_its_gpu = at != at_.end() && at->second == e.group;
    if (e.visible && holds_its_gpu) {
      e.deleting = e.delete_sent = false;  // the next sweep decides again, from the ledger then
    } else if (e.visible) {
      strays_.try_emplace(e.pod, Stray{e.uid, false});  // another group holds its GPU now: it only goes
      erase(here);
    } else {
      erase(here);  // not in the API server's list (the new leader lists pods again)
    }
  }
  notify();
}

std::chrono::steady_clock::time_point ReservationBook::term_start() const {
  std::lock_guard lock(mu_);
  return term_start_;
}

void ReservationBook::stray(const std::string& pod, const std::string& uid) {
  std::lock_guard lock(mu_);
  strays_.try_emplace(pod, Stray{uid, false});
}

void ReservationBook::keep_strays(const std::function<bool(const std::string& pod)>& listed) {
  std::lock_guard lock(mu_);
  std::erase_if(strays_, [&](const auto& s) { return !listed(s.first); });
}

bool ReservationBook::sweep_due() const {
  std::lock_guard lock(mu_);
  return idle_noted_ || !deletions_.empty() ||
         std::any_of(strays_.begin(), strays_.end(), [](const auto& s) { return !s.second.asked; });
}

void ReservationBook::note_idle() {
  std::lock_guard lock(mu_);
  idle_noted_ = true;
}

void ReservationBook::deleted(const std::string& pod) { gone(pod); }

bool ReservationBook::is_reservation(const json& pod) const {
  return k8s::metadata_string(pod, "namespace") == options_.ns && !gpu_groups(pod).empty();
}

ReservationBook::Entry ReservationBook::seen(const json& pod, int gpu_count) {
  static const json::json_pointer kDeletionTimestamp("/metadata/deletionTimestamp");
  const std::vector<std::string> groups = gpu_groups(pod);
  const std::string name = k8s::metadata_string(pod, "name");
  const std::string node = string_at(pod, "/spec/nodeName");
  const std::string owner = string_at(pod, "/metadata/annotations/fracpack.io~1reservation-owner");
  const std::optional<int> index = owner == options_.owner ? ledger_index(pod, gpu_count, options_.ns) : std::nullopt;
  std::lock_guard lock(mu_);
  if (auto known = groups_.find(groups.front()); known == groups_.end() || known->second.pod != name) {
    for (auto& [group, other] : groups_) {  // relabelled: the pod is no longer its old group's reservation
      if (group != groups.front() && other.pod == name && other.visible) {
        other.pod.clear();
        other.visible = false;
      }
    }
  }
  auto [it, added] = groups_.try_emplace(groups.front());
  Entry& e = it->second;
  if (added) {
    e.group = groups.front();
    e.since = std::chrono::steady_clock::now();
  }
  if (e.visible && !e.pod.empty() && e.pod != name) {
    // A second reservation pod of one group: the group keeps its first; this one is deleted.
    spdlog::warn("reservation pod {}/{}: group {} already has reservation pod {}; deleting the second", options_.ns, name, e.group, e.pod);
    strays_.try_emplace(name, Stray{k8s::metadata_string(pod, "uid"), false});
    return e;
  }
  if (!e.node.empty() && e.node != node && e.gpu >= 0) {  // not where its group was: relearned
    if (auto at = at_.find({e.node, e.gpu}); at != at_.end() && at->second == e.group) at_.erase(at);
    e.gpu = -1;
    e.indexed = false;
  }
  e.node = node;
  e.pod = name;
  e.uid = k8s::metadata_string(pod, "uid");
  e.owner = owner;
  e.creator = string_at(pod, "/metadata/annotations/fracpack.io~1created-by");
  e.created = k8s::metadata_string(pod, "creationTimestamp");
  e.visible = true;
  if (pod.contains(kDeletionTimestamp) && !pod[kDeletionTimestamp].is_null()) {
    // Deleted by someone (an eviction, an administrator) and terminating: its GPU goes from the
    // kubelet's count when it ends, so no fraction joins it meanwhile (one at a time).
    e.deleting = e.delete_sent = true;
  }
  e.members = owner == options_.owner ? members_of(pod) : std::map<std::string, std::string>{};
  if (index) place_indexed(e, node, *index);
  take_report(e, string_at(pod, "/metadata/annotations/run.ai~1reserve_for_gpu_index"));
  return e;
}

void ReservationBook::take_report(Entry& e, std::string device) {
  if (device.find(',') != std::string::npos) {
    spdlog::warn("reservation pod {}/{}: reported \"{}\", not one GPU; waiting for a GPU UUID", options_.ns, e.pod, device);
    return;
  }
  if (device.empty() || device == "-1" || device == e.device) return;
  for (const auto& [group, other] : groups_) {  // a new report: no other reservation pod of the node may have it
    if (group != e.group && other.node == e.node && other.device == device) {
      spdlog::warn("reservation pod {}/{}: reported GPU {}, which reservation pod {} on node {} reported already; not used",
                   options_.ns, e.pod, device, other.pod, e.node);
      return;
    }
  }
  e.device = std::move(device);
  notify();
}

void ReservationBook::place_indexed(Entry& e, const std::string& node, int gpu) {
  if (e.indexed && e.node == node && e.gpu == gpu) return;
  if (auto at = at_.find({node, gpu}); at != at_.end() && at->second != e.group) {
    auto other = groups_.find(at->second);
    if (other != groups_.end() && other->second.indexed && !other->second.deleting && !outranks(e, other->second)) {
      // Two of this deployment's pods name one GPU (a creation whose answer was lost, then a
      // second): every replica keeps the one fractions were bound behind, else the newer,
      // whatever order its watch showed them in.
      spdlog::warn("reservation pods {}/{} (group {}) and {} (group {}) both say they hold GPU {} of node {}; {} keeps it (fractions "
                   "were bound behind it, or it is the newer), and the other's GPU is learned as a stranger's",
                   options_.ns, other->second.pod, other->first, e.pod, e.group, gpu, node, other->second.pod);
      return;
    }
    if (other != groups_.end()) {  // a guess, or an older pod, gives way; the sweep guesses its GPU again
      other->second.gpu = -1;
      other->second.indexed = false;
    }
    at_.erase(at);
  }
  if (e.gpu >= 0) {
    if (auto at = at_.find({e.node, e.gpu}); at != at_.end() && at->second == e.group) at_.erase(at);
  }
  e.node = node;
  e.gpu = gpu;
  e.indexed = true;
  at_[{node, gpu}] = e.group;
}

void ReservationBook::gone(const std::string& pod) {
  std::lock_guard lock(mu_);
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto here = it++;
    if (here->second.pod == pod) erase(here);  // every entry that names it (a relabelled pod names two)
  }
  std::erase_if(deletions_, [&](const ReservationDeletion& d) { return d.pod == pod; });
  strays_.erase(pod);
  notify();
}

void ReservationBook::erase(std::map<std::string, Entry>::iterator it) {
  if (auto at = at_.find({it->second.node, it->second.gpu}); at != at_.end() && at->second == it->first) at_.erase(at);
  groups_.erase(it);
}

std::optional<int> ReservationBook::gpu_of(const std::string& group, const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second.node != node || it->second.gpu < 0) return std::nullopt;
  return it->second.gpu;
}

int ReservationBook::learn(const std::string& group, const std::string& node, int gpu, bool claimed) {
  std::lock_guard lock(mu_);
  auto [it, added] = groups_.try_emplace(group);
  Entry& e = it->second;
  if (added) {
    e.group = group;
    e.since = std::chrono::steady_clock::now();
  }
  e.claimed = e.claimed || claimed;
  if (e.gpu >= 0 && e.node == node) return e.gpu;
  if (auto at = at_.find({node, gpu}); at != at_.end() && at->second != group) {
    // Another group's GPU: this group is misplaced in the ledger's view; keep the first.
    if (e.gpu < 0 && e.pod.empty()) groups_.erase(it);  // nothing else knows it
    return gpu;
  }
  if (e.visible && e.node != node) return gpu;  // its reservation pod is on another node: this pod is no member
  if (e.gpu >= 0) {  // moved (a pod of this group on another node): its old GPU is not its any more
    if (auto at = at_.find({e.node, e.gpu}); at != at_.end() && at->second == group) at_.erase(at);
  }
  e.node = node;
  e.gpu = gpu;
  at_[{node, gpu}] = group;
  return gpu;
}

std::optional<int> ReservationBook::gpu_of_device(const std::string& node, const std::string& device) const {
  std::lock_guard lock(mu_);
  for (const auto& [group, e] : groups_) {
    if (e.node == node && e.device == device && e.gpu >= 0) return e.gpu;
  }
  return std::nullopt;
}

std::optional<ReservationBook::Entry> ReservationBook::at(const std::string& node, int gpu) const {
  std::lock_guard lock(mu_);
  auto at = at_.find({node, gpu});
  if (at == at_.end()) return std::nullopt;
  auto it = groups_.find(at->second);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

std::optional<ReservationBook::Entry> ReservationBook::find(const std::string& group) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ReservationBook::groups_of_member(const std::string& uid, const std::string& node) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;  // the node's placed groups only (a few): at_ is ordered by node, then index
  for (auto it = at_.lower_bound({node, INT_MIN}); it != at_.end() && it->first.first == node; ++it) {
    const auto e = groups_.find(it->second);
    if (e != groups_.end() && e->second.visible && e->second.members.contains(uid)) out.push_back(e->first);
  }
  return out;
}

std::vector<ReservationBook::Entry> ReservationBook::entries() const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  out.reserve(groups_.size());
  for (const auto& [group, e] : groups_) out.push_back(e);
  return out;
}

void ReservationBook::retire(const std::string& group) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second.deleting) return;
  it->second.deleting = true;
  if (!it->second.pod.empty()) {
    deletions_.push_back({it->second.pod, it->second.uid});  // created and not seen yet, too: a 404 then says it is gone
  } else {
    erase(it);  // learned from a fraction only: no pod to delete
  }
  notify();
}

}  // namespace fracpack::api
