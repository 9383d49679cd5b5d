#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/quota/workload.hpp"

namespace fracpack::quota {

Result<TimedWorkload> timed_workload_from_objects(const std::vector<nlohmann::json>& objects, const std::string& source,
                                                  const DecodeConfig& decode) {
  PriorityClasses classes;
  for (const auto& o : objects) {
    if (k8s::kind_of(o) != "PriorityClass") continue;
    const auto* name = o.contains("metadata") ? &o["metadata"] : nullptr;
    if (name != nullptr && name->contains("name") && (*name)["name"].is_string() && o.contains("value") && o["value"].is_number_integer()) {
      classes.add((*name)["name"].get<std::string>(), o["value"].get<std::int32_t>());
    }
  }
  TimedWorkload out;
  std::set<std::string> keys;
  for (const auto& o : objects) {
    if (k8s::kind_of(o) != "Pod") continue;
    auto pod = k8s::decode_pod(o, decode, classes);
    if (!pod) {  // as place reports it Invalid: never placed, said so, and the rest replays
      out.warnings.push_back(fmt::format("{}: {}; left out of the replay", source, pod.status().message()));
      continue;
    }
    if (pod->created <= 0) {
      return invalid_argument("{}: pod {}: metadata.creationTimestamp is required in a replay (it is the arrival time), "
                              "an RFC 3339 time after 1970",
                              source, pod->key());
    }
    TimedPod t;
    t.arrival = pod->created;
    const auto& meta = o["metadata"];
    if (meta.contains("annotations") && meta["annotations"].is_object() && meta["annotations"].contains(kRunSecondsAnnotation)) {
      const auto& v = meta["annotations"][std::string(kRunSecondsAnnotation)];
      const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      std::int64_t seconds = -1;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      if (ec != std::errc{} || ptr != text.data() + text.size() || seconds < 0 || seconds > kMaxRunSeconds) {
        return invalid_argument("{}: pod {}: annotation {} = \"{}\" must be an integer number of seconds in 0…{}", source, pod->key(),
                                kRunSecondsAnnotation, text, kMaxRunSeconds);
      }
      t.run_seconds = seconds;
    }
    if (!keys.insert(pod->key()).second) return invalid_argument("{}: pod {} appears twice", source, pod->key());
    t.pod = std::move(*pod);
    out.pods.push_back(std::move(t));
  }
  if (out.pods.empty()) return invalid_argument("{}: no Pod objects{}", source, out.warnings.empty() ? "" : " that decode");
  std::stable_sort(out.pods.begin(), out.pods.end(), [](const TimedPod& a, const TimedPod& b) {
    return a.arrival != b.arrival ? a.arrival < b.arrival : a.pod.key() < b.pod.key();
  });
  return out;
}

}  // namespace fracpack::quota
