#include "plugin_api/leader_election.hpp"

#include <algorithm>
#include <random>
#include <string_view>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/time.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "fracpack/k8s/names.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

/// lease.spec[key], nullptr when absent (k8s::member).
const json* spec_field(const json& lease, std::string_view key) {
  const json* spec = k8s::member(lease, "spec");
  return spec == nullptr ? nullptr : k8s::member(*spec, key);
}

std::string spec_string(const json& lease, std::string_view key) {
  const json* v = spec_field(lease, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

std::int64_t spec_integer(const json& lease, std::string_view key) {
  const json* v = spec_field(lease, key);
  return v != nullptr && v->is_number_integer() ? v->get<std::int64_t>() : 0;
}

std::string holder_of(const json& lease) { return spec_string(lease, "holderIdentity"); }
std::int64_t transitions_of(const json& lease) { return spec_integer(lease, "leaseTransitions"); }
std::string resource_version(const json& object) { return k8s::metadata_string(object, "resourceVersion"); }

/// spec.leaseDurationSeconds, 0 when absent.
std::chrono::milliseconds duration_of(const json& lease) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(spec_integer(lease, "leaseDurationSeconds"), 0, 86'400) * 1000);
}

/// A Prometheus label value: backslash, quote and newline escaped.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Status check(const LeaderElectionOptions& o) {
  if (o.identity.empty()) return Status(Code::kInvalidArgument, "--leader-elect-identity: empty (set POD_NAME, or give the flag)");
  if (!(o.retry_period.count() > 0 && o.retry_period < o.renew_deadline && o.renew_deadline < o.lease_duration)) {
    return Status(Code::kInvalidArgument,
                  fmt::format("leader election needs --leader-elect-retry-period ({} ms) < --leader-elect-renew-deadline ({} ms) < "
                              "--leader-elect-lease-duration ({} ms)",
                              o.retry_period.count(), o.renew_deadline.count(), o.lease_duration.count()));
  }
  for (const auto& [flag, name] : {std::pair{"--leader-elect-resource-namespace", &o.lease_namespace},
                                   std::pair{"--leader-elect-resource-name", &o.lease_name}}) {
    if (!k8s::is_dns_subdomain(*name)) return Status(Code::kInvalidArgument, fmt::format("{} {:?}: not a DNS subdomain name", flag, name->substr(0, 64)));
  }
  return Status::ok();
}

LeaderElector::LeaderElector(std::shared_ptr<KubeConnection> api, LeaderElectionOptions options, std::function<void(bool)> on_leading)
    : api_(std::move(api)), options_(std::move(options)), on_leading_(std::move(on_leading)) {}

LeaderElector::~LeaderElector() { stop(); }

void LeaderElector::start() {
  thread_ = std::thread([this] { run(); });
}

void LeaderElector::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool LeaderElector::leading() const {
  const std::int64_t at = renewed_at_.load();
  if (at == 0) return false;
  const auto age = Clock::now().time_since_epoch() - std::chrono::nanoseconds(at);
  return age < options_.renew_deadline;
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

std::string LeaderElector::metrics() const {
  return fmt::format(
      "# HELP fracpack_leader Whether this replica leads (holds the Lease and renewed it within the renew deadline).\n"
      "# TYPE fracpack_leader gauge\nfracpack_leader{{lease=\"{}/{}\",identity=\"{}\"}} {}\n"
      "# HELP fracpack_leader_transitions_total Times this replica took the lead.\n"
      "# TYPE fracpack_leader_transitions_total counter\nfracpack_leader_transitions_total {}\n",
      label_value(options_.lease_namespace), label_value(options_.lease_name), label_value(options_.identity), leading() ? 1 : 0,
      transitions_.load());
}

std::string LeaderElector::path(bool collection) const {
  const std::string base = fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases", options_.lease_namespace);
  return collection ? base : base + "/" + options_.lease_name;
}

bool LeaderElector::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, d, [&] { return stopping_.load(); });
  return !stopping_;
}

void LeaderElector::run() {
  std::mt19937 jitter(std::random_device{}());
  std::uniform_real_distribution<double> factor(1.0, 1.2);  // client-go's JitterFactor
  bool was_leading = false;
  while (!stopping_) {
    const auto attempt = Clock::now();  // a renewal counts from before it was sent: the conservative end
    bool taken = false;                  // the Lease was another's, or nobody's, before this write
    const bool renewed = try_acquire_or_renew(taken);
    auto lose = [&] {
      spdlog::info("leader election: lost the lead on Lease {}/{} as {}", options_.lease_namespace, options_.lease_name, options_.identity);
      renewed_at_ = 0;
      was_leading = false;
      if (on_leading_) on_leading_(false);
    };
    if (was_leading && taken) lose();  // lost and taken again in between: what held while leading may not now
    if (renewed && !was_leading) take_lead();
    if (renewed) renewed_at_ = attempt.time_since_epoch().count();
    const bool now_leading = leading();
    if (was_leading && !now_leading) lose();
    was_leading = now_leading;
    const auto wait = now_leading ? options_.retry_period : std::chrono::milliseconds(static_cast<std::int64_t>(
                                                                 static_cast<double>(options_.retry_period.count()) * factor(jitter)));
    if (!pause(wait)) break;
  }
  if (leading()) release();
  if (was_leading && on_leading_) on_leading_(false);
  renewed_at_ = 0;
}

void LeaderElector::take_lead() {
  renewed_at_ = 0;  // not leading until the hook has run: it prepares what a Bind needs first
  ++transitions_;
  spdlog::info("leader election: took the lead on Lease {}/{} as {}", options_.lease_namespace, options_.lease_name, options_.identity);
  if (on_leading_) on_leading_(true);
}

bool LeaderElector::try_acquire_or_renew(bool& taken) {
  auto client = api_->client(std::chrono::seconds(std::max<std::int64_t>(1, options_.retry_period.count() / 1000)));
  auto res = client->Get(path(false), {{"Accept", "application/json"}});
  const auto now = Clock::now();
  const auto wall = std::chrono::system_clock::now();
  if (!res) {
    spdlog::warn("leader election: GET Lease {}/{}: {}", options_.lease_namespace, options_.lease_name, httplib::to_string(res.error()));
    return false;
  }
  json lease;
  if (res->status == 404) {
    // Deleted by hand: its last holder (another replica) may still think it leads until its
    // renew deadline. Created again only once it would have expired; by its holder at once.
    const std::string last = observed_.is_object() ? holder_of(observed_) : "";
    if (!last.empty() && last != options_.identity && now < observed_at_ + std::max(options_.lease_duration, duration_of(observed_))) {
      return false;
    }
    taken = last != options_.identity || !leading();
    lease = {{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
             {"spec", {{"leaseTransitions", 0}, {"acquireTime", k8s::format_micro_time(wall)}}}};
  } else if (res->status == 200) {
    lease = json::parse(res->body, nullptr, false);
    if (lease.is_discarded() || !lease.is_object()) return false;
    if (!observed_.is_object() || observed_.value("spec", json()) != lease.value("spec", json())) observed_at_ = now;
    observed_ = lease;
    const std::string holder = holder_of(lease);
    warn_if_identity_shared(lease, holder, now);
    {
      std::lock_guard lock(mu_);
      leader_ = holder;
    }
    // The holder's own lease duration counts when it is the longer (a rolling update that
    // changes the flag must not let a follower take over inside the old leader's deadline).
    const auto duration = std::max(options_.lease_duration, duration_of(lease));
    if (!holder.empty() && holder != options_.identity) {
      renewed_at_ = 0;  // another replica holds it: this one stops leading now, not at its renew deadline
      if (now < observed_at_ + duration) return false;
    }
    if (holder != options_.identity) {  // taking it over (client-go counts every change of holder)
      lease["spec"]["leaseTransitions"] = transitions_of(lease) + 1;
      lease["spec"]["acquireTime"] = k8s::format_micro_time(wall);
      taken = true;
    }
  } else {
    spdlog::warn("leader election: GET Lease {}/{}: HTTP {}", options_.lease_namespace, options_.lease_name, res->status);
    return false;
  }
  lease["spec"]["holderIdentity"] = options_.identity;
  // Whole seconds (the field's unit), rounded up: a follower never waits less than the flag says.
  lease["spec"]["leaseDurationSeconds"] = std::max<std::int64_t>(1, (options_.lease_duration.count() + 999) / 1000);
  lease["spec"]["renewTime"] = k8s::format_micro_time(wall);
  return write(lease, res->status == 404);
}

bool LeaderElector::write(const json& lease, bool create) {
  auto client = api_->client(std::chrono::seconds(std::max<std::int64_t>(1, options_.retry_period.count() / 1000)));
  const std::string body = lease.dump();
  auto res = create ? client->Post(path(true), body, "application/json") : client->Put(path(false), body, "application/json");
  if (!res) return false;
  if (res->status == 409) return false;  // another replica wrote first: optimistic concurrency
  if (res->status != 200 && res->status != 201) {
    spdlog::warn("leader election: {} Lease {}/{}: HTTP {}: {:.200}", create ? "create" : "update", options_.lease_namespace,
                 options_.lease_name, res->status, res->body);
    return false;
  }
  json written = json::parse(res->body, nullptr, false);
  if (written.is_object()) {
    observed_ = written;
    observed_at_ = Clock::now();
    written_version_ = resource_version(written);
    written_renew_time_ = spec_string(written, "renewTime");
  }
  std::lock_guard lock(mu_);
  leader_ = options_.identity;
  return true;
}

void LeaderElector::warn_if_identity_shared(const json& lease, const std::string& holder, Clock::time_point now) {
  // Our name on a version we did not write: another replica runs with this identity, and both
  // believe they lead (the optimistic concurrency cannot tell two writers of one name apart).
  if (holder != options_.identity || written_version_.empty() || resource_version(lease) == written_version_) return;
  if (spec_string(lease, "renewTime") == written_renew_time_) return;  // another writer (an annotation by hand), not a renewal
  if (now < last_shared_warning_ + std::chrono::minutes(1)) return;
  last_shared_warning_ = now;
  spdlog::error("leader election: another replica renews Lease {}/{} as {}: identities must be unique (the pod name, "
                "--leader-elect-identity); both replicas bind now",
                options_.lease_namespace, options_.lease_name, options_.identity);
}

void LeaderElector::release() {
  if (!observed_.is_object() || holder_of(observed_) != options_.identity) return;
  json lease = observed_;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = k8s::format_micro_time(std::chrono::system_clock::now());
  renewed_at_ = 0;  // stop acting before the write: a follower may take over the moment it lands
  if (write(lease, false)) {
    std::lock_guard lock(mu_);
    leader_.clear();
    spdlog::info("leader election: released Lease {}/{}", options_.lease_namespace, options_.lease_name);
  }
}

}  // namespace fracpack::api
