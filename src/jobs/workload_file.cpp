#include "fracpack/sim/workload_file.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/alibaba.hpp"

namespace fracpack {

Result<std::vector<TypicalPod>> read_workload(const std::string& path, const DecodeConfig& decode,
                                              std::vector<std::string>* warnings) {
  std::vector<PodRequest> pods;
  if (std::filesystem::path(path).extension() == ".csv") {
    auto rows = trace::read_pods(path);
    if (!rows) return rows.status();
    for (const auto& r : *rows) pods.push_back(trace::to_pod_request(r));
  } else {
    auto objects = k8s::read_input_file(path);
    if (!objects) return objects.status();
    for (const auto& o : *objects) {
      if (k8s::kind_of(o.object) != "Pod") continue;
      auto pod = k8s::decode_pod(o.object, decode, PriorityClasses{});
      if (pod) {
        pods.push_back(std::move(*pod));
      } else if (warnings != nullptr) {  // a sample of shapes: one bad pod does not spoil the rest
        warnings->push_back(fmt::format("--workload {}: {} ({}); left out of the target workload", path, pod.status().message(), o.origin));
      } else {
        return invalid_argument("--workload {}: {}", path, pod.status().message());
      }
    }
  }
  auto typical = typical_pods(pods);
  if (typical.empty() || std::all_of(typical.begin(), typical.end(), [](const TypicalPod& t) { return t.gpus == 0; })) {
    return invalid_argument("--workload {}: no pod with a GPU request in milli-GPU (gpu-fraction, or whole GPUs)", path);
  }
  return typical;
}

}  // namespace fracpack
