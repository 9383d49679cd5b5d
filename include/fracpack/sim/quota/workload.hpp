// A workload over time for queue replays (docs/quota-tuning.md): the trace's pods with arrival and
// run time, each assigned to a queue by a rule file.
//
// Rule file (YAML or JSON), rules tried in order, the first that matches wins:
//
//   rules:
//     - qos: LS                       # the pod list's qos column: one value or a list
//       queue: inference
//       preemptible: false            # default true
//     - namePattern: "openb-pod-00.*" # RE2 regex (linear time; no backreferences or lookaround),
//       queue: research               #   matched against the whole name
//     - hash: {buckets: 3, bucket: 0} # a stable hash of the name into N buckets
//       queue: team-a
//   default: {queue: best-effort}     # optional: pods no rule matches; without it they are an error
//
// A rule may set `priority` (default: 50 when preemptible, 125 when not — KAI's "train" and
// "inference" priority classes; kNonPreemptibleThreshold is 100). A preemptible: false rule with a
// priority below 100, or a preemptible one at 100 or above, is refused: KAI would not treat it so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace re2 {
class RE2;
}

#include "fracpack/core/config.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/sim/alibaba.hpp"

namespace fracpack::quota {

struct QueueRule {
  std::vector<std::string> qos;            ///< match any of these qos values (empty: any)
  std::optional<std::string> name_pattern; ///< RE2 regex over the whole pod name
  std::shared_ptr<const re2::RE2> regex;   ///< name_pattern, compiled once
  int hash_buckets = 0;                    ///< > 0: match when fnv1a(name) % buckets == bucket
  int hash_bucket = 0;
  std::string queue;
  bool preemptible = true;
  std::int32_t priority = 50;
  std::string where;  ///< "rules.yaml rules[2]", for messages
};

struct RuleSet {
  std::vector<QueueRule> rules;
  std::optional<QueueRule> fallback;  ///< `default`
};

/// Reads and checks a rule file. kInvalidArgument naming the file and the rule (`rules[i].field`):
/// no rules, a rule without `queue` or with no condition, an unknown key, a bad regex, buckets < 1
/// or bucket outside 0..buckets−1, a priority that contradicts `preemptible`.
Result<RuleSet> read_rules(const std::filesystem::path& path);

/// The first rule matching `pod` (the fallback when none does), or nullptr.
const QueueRule* match(const RuleSet& rules, const trace::TracePod& pod);

/// A pod of the replay: what it asks for (queue, priority and preemptibility set by its rule),
/// when it arrives and how long it runs once started.
struct TimedPod {
  PodRequest pod;
  std::int64_t arrival = 0;                 ///< seconds from the trace start (creation_time)
  std::optional<std::int64_t> run_seconds;  ///< nullopt: runs until the replay ends
};

struct TimedWorkload {
  std::vector<TimedPod> pods;          ///< by arrival, then name
  std::vector<std::string> warnings;   ///< rules that matched no pod, pods that match none (with a default)
};

/// The pods of a trace with their queues. Run time: deletion − scheduled for pods the trace
/// started, deletion − creation for the others (the only span the trace has); a pod without a
/// deletion time runs to the end. kInvalidArgument naming the pod when no rule (and no default)
/// matches it, or when its times run backwards.
Result<TimedWorkload> timed_workload(const std::vector<trace::TracePod>& pods, const RuleSet& rules);

/// Longest run time a replay accepts, in seconds (2^40 s, about 34,800 years, as for the trace's
/// time columns): sums of times stay far from overflow.
inline constexpr std::int64_t kMaxRunSeconds = std::int64_t{1} << 40;

/// The annotation that gives a Pod object's run time in seconds for a replay (absent: it runs to
/// the end).
inline constexpr std::string_view kRunSecondsAnnotation = "replay.fracpack.io/run-seconds";

/// Pod objects (as kubectl prints them) as a workload: arrival = metadata.creationTimestamp, run
/// time from kRunSecondsAnnotation, queue from the pod's queue label (kai.scheduler/queue),
/// priority and preemptibility as KAI decides them (PriorityClass objects in the same list are
/// used). A pod that does not decode is left out with a warning naming it (place reports it
/// Invalid). kInvalidArgument naming the pod for a missing creationTimestamp or a run time that is
/// not an integer in 0 … kMaxRunSeconds, the same pod (namespace/name) twice; no pods at all is an
/// error too.
Result<TimedWorkload> timed_workload_from_objects(const std::vector<nlohmann::json>& objects, const std::string& source,
                                                  const DecodeConfig& decode = {});

}  // namespace fracpack::quota
