#include <set>

#include <fmt/format.h>
#include <re2/re2.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/priority.hpp"
#include "fracpack/sim/quota/workload.hpp"

namespace fracpack::quota {
namespace {

using nlohmann::json;

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

Result<std::vector<std::string>> strings(const json& v, const std::string& where) {
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_string()) return invalid_argument("{}: must be a string or a list of strings", where);
      out.push_back(e.get<std::string>());
    }
  } else {
    return invalid_argument("{}: must be a string or a list of strings", where);
  }
  if (out.empty()) return invalid_argument("{}: lists no value", where);
  return out;
}

Result<int> small_int(const json& v, const std::string& where, int lo, int hi) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    return invalid_argument("{}: must be an integer in {}..{}", where, lo, hi);
  }
  return static_cast<int>(v.get<std::int64_t>());
}

/// One rule (`fallback`: the `default` entry, which needs no condition).
Result<QueueRule> read_rule(const json& r, const std::string& where, bool fallback) {
  if (!r.is_object()) return invalid_argument("{}: must be a map", where);
  static const std::set<std::string> kKeys{"qos", "namePattern", "hash", "queue", "preemptible", "priority"};
  QueueRule rule;
  rule.where = where;
  for (const auto& [key, value] : r.items()) {
    if (kKeys.count(key) == 0) {
      return invalid_argument("{}: unknown key \"{}\" (known: qos, namePattern, hash, queue, preemptible, priority)", where, key);
    }
  }
  if (r.contains("queue") && r["queue"].is_number_integer() && r["queue"].get<std::int64_t>() >= 0) {
    rule.queue = r["queue"].dump();  // `queue: 60`: YAML reads the name as a number
  } else if (!r.contains("queue") || !r["queue"].is_string() || r["queue"].get<std::string>().empty()) {
    return invalid_argument("{}.queue: a queue name is required", where);
  } else {
    rule.queue = r["queue"].get<std::string>();
  }
  if (r.contains("qos")) {
    auto q = strings(r["qos"], where + ".qos");
    if (!q) return q.status();
    rule.qos = std::move(*q);
  }
  if (r.contains("namePattern")) {
    if (!r["namePattern"].is_string()) return invalid_argument("{}.namePattern: must be a string", where);
    rule.name_pattern = r["namePattern"].get<std::string>();
    RE2::Options options;
    options.set_log_errors(false);
    auto regex = std::make_shared<const RE2>(*rule.name_pattern, options);
    if (!regex->ok()) {
      return invalid_argument("{}.namePattern \"{}\": not a valid RE2 regular expression ({})", where, *rule.name_pattern, regex->error());
    }
    rule.regex = std::move(regex);
  }
  if (r.contains("hash")) {
    const json& h = r["hash"];
    if (!h.is_object() || !h.contains("buckets") || !h.contains("bucket")) {
      return invalid_argument("{}.hash: must be {{buckets: N, bucket: K}}", where);
    }
    for (const auto& [key, value] : h.items()) {
      if (key != "buckets" && key != "bucket") return invalid_argument("{}.hash: unknown key \"{}\" (known: buckets, bucket)", where, key);
    }
    auto buckets = small_int(h["buckets"], where + ".hash.buckets", 1, 1'000'000);
    if (!buckets) return buckets.status();
    auto bucket = small_int(h["bucket"], where + ".hash.bucket", 0, *buckets - 1);
    if (!bucket) return bucket.status();
    rule.hash_buckets = *buckets;
    rule.hash_bucket = *bucket;
  }
  if (!fallback && rule.qos.empty() && !rule.name_pattern && rule.hash_buckets == 0) {
    return invalid_argument("{}: no condition (qos, namePattern or hash); use `default` for the pods no rule matches", where);
  }
  if (r.contains("preemptible")) {
    if (!r["preemptible"].is_boolean()) return invalid_argument("{}.preemptible: must be true or false", where);
    rule.preemptible = r["preemptible"].get<bool>();
  }
  rule.priority = rule.preemptible ? 50 : 125;
  if (r.contains("priority")) {
    auto p = small_int(r["priority"], where + ".priority", -1'000'000'000, 1'000'000'000);
    if (!p) return p.status();
    rule.priority = *p;
    if ((rule.priority >= kNonPreemptibleThreshold) == rule.preemptible) {
      return invalid_argument("{}.priority {}: KAI treats priority ≥ {} as non-preemptible, but the rule says preemptible: {}",
                              where, rule.priority, kNonPreemptibleThreshold, rule.preemptible);
    }
  }
  return rule;
}

}  // namespace

Result<RuleSet> read_rules(const std::filesystem::path& path) {
  auto docs = k8s::read_objects_file(path.string());
  if (!docs) return docs.status();
  const std::string file = path.string();
  if (docs->size() != 1) return invalid_argument("{}: expected one document with `rules:`, found {}", file, docs->size());
  const json& doc = docs->front();
  for (const auto& [key, value] : doc.items()) {
    if (key != "rules" && key != "default") return invalid_argument("{}: unknown key \"{}\" (known: rules, default)", file, key);
  }
  if (!doc.contains("rules") || !doc["rules"].is_array() || doc["rules"].empty()) {
    return invalid_argument("{}: `rules` must list at least one rule", file);
  }
  RuleSet set;
  for (std::size_t i = 0; i < doc["rules"].size(); ++i) {
    auto rule = read_rule(doc["rules"][i], fmt::format("{} rules[{}]", file, i), false);
    if (!rule) return rule.status();
    set.rules.push_back(std::move(*rule));
  }
  if (doc.contains("default")) {
    auto rule = read_rule(doc["default"], file + " default", true);
    if (!rule) return rule.status();
    set.fallback = std::move(*rule);
  }
  return set;
}

const QueueRule* match(const RuleSet& rules, const trace::TracePod& pod) {
  for (const auto& r : rules.rules) {
    if (!r.qos.empty() && std::find(r.qos.begin(), r.qos.end(), pod.qos) == r.qos.end()) continue;
    if (r.regex && !RE2::FullMatch(pod.name, *r.regex)) continue;
    if (r.hash_buckets > 0 && fnv1a(pod.name) % static_cast<std::uint64_t>(r.hash_buckets) != static_cast<std::uint64_t>(r.hash_bucket)) {
      continue;
    }
    return &r;
  }
  return rules.fallback ? &*rules.fallback : nullptr;
}

}  // namespace fracpack::quota
