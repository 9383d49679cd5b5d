// docs/requests.md rules 10 (NvFractions keys), 11 (legacy KAI keys) and 14 (how they combine):
// validation and merge.
#include <algorithm>
#include <charconv>
#include <set>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quantity.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "k8s/pod_parts.hpp"

namespace fracpack::k8s {
namespace {

constexpr std::string_view kContainerPrefix = "nvidia.com/container.";
constexpr std::string_view kMemoryRequest = "gpu-memory.request";
constexpr std::string_view kMemoryLimit = "gpu-memory.limit";
constexpr std::string_view kComputeMode = "gpu-compute.mode";
constexpr std::string_view kDevices = "gpus.devices";
constexpr std::string_view kPortion = "gpu-compute.portion";

constexpr std::string_view kGpuFraction = "gpu-fraction";
constexpr std::string_view kGpuMemory = "gpu-memory";
constexpr std::string_view kNumDevices = "gpu-fraction-num-devices";
constexpr std::string_view kContainerName = "gpu-fraction-container-name";

std::string key_of(const std::string& ctr, std::string_view suffix) {
  return fmt::format("{}{}.{}", kContainerPrefix, ctr, suffix);
}

std::string list(const std::vector<std::string>& names) { return excerpt_list(names); }

/// The NvFractions keys of one container.
struct NvKeys {
  std::string container;
  std::map<std::string, std::string> values;  // suffix → value
};

Result<std::optional<NvKeys>> collect_nv_keys(const std::map<std::string, std::string>& annotations,
                                              const std::vector<std::string>& containers,
                                              const std::string& who) {
  std::map<std::string, NvKeys> by_container;
  for (const auto& [key, value] : annotations) {
    if (!key.starts_with(kContainerPrefix)) continue;
    std::string_view rest(key);
    rest.remove_prefix(kContainerPrefix.size());
    auto dot = rest.find('.');
    std::string suffix(dot == std::string_view::npos ? "" : rest.substr(dot + 1));
    if (dot == std::string_view::npos || dot == 0 ||
        (suffix != kMemoryRequest && suffix != kMemoryLimit && suffix != kComputeMode &&
         suffix != kDevices && suffix != kPortion)) {
      return invalid_argument(
          "{}: annotation \"{}\" is not an NvFractions key (expected nvidia.com/container.<container>."
          "{{{}, {}, {}}})",
          who, excerpt(key), kMemoryRequest, kMemoryLimit, kComputeMode);
    }
    std::string ctr(rest.substr(0, dot));
    if (std::find(containers.begin(), containers.end(), ctr) == containers.end()) {
      return invalid_argument(
          "{}: annotation \"{}\" names container \"{}\", which is not in the pod (containers: {})", who,
          excerpt(key), excerpt(ctr), list(containers));
    }
    auto& entry = by_container[ctr];
    entry.container = ctr;
    entry.values[suffix] = value;
  }
  if (by_container.empty()) return std::optional<NvKeys>{};
  if (by_container.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [n, _] : by_container) names.push_back(n);
    return invalid_argument(
        "{}: NvFractions annotations name containers {}; only one container per pod may carry them",
        who, list(names));
  }
  return std::optional<NvKeys>{std::move(by_container.begin()->second)};
}

/// A memory quantity annotation, > 0, in MiB rounded up.
Result<MiB> memory_annotation(const std::string& key, const std::string& value, const std::string& who) {
  auto bytes = parse_bytes(value, fmt::format("annotation \"{}\"", key));
  if (!bytes) return in_context(bytes.status(), who);
  if (bytes->count() == 0) return invalid_argument("{}: annotation \"{}\" = \"{}\": must be > 0", who, key, excerpt(value));
  return to_mib_ceil(*bytes);
}

/// A strict positive decimal integer ("1", "24000"); no signs, spaces or suffixes.
std::optional<std::int64_t> strict_positive_integer(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

/// gpu-fraction: a decimal in (0, 1], in milli-GPU rounded up ("0.3333" → 334).
Result<MilliGpu> parse_fraction(const std::string& value, const std::string& who,
                               std::string_view key = kGpuFraction) {
  const auto bad = [&] {
    return invalid_argument(
        "{}: annotation \"{}\" = \"{}\": a fraction must be a decimal in (0, 1] (KAI gpu-fraction)", who, key,
        excerpt(value));
  };
  std::int64_t whole = 0;
  std::int64_t milli = 0;
  int frac_digits = 0;
  bool point = false;
  bool digit = false;
  bool round_up = false;
  for (char c : value) {
    if (c == '.') {
      if (point) return bad();
      point = true;
    } else if (c >= '0' && c <= '9') {
      digit = true;
      if (!point) {
        whole = std::min<std::int64_t>(whole * 10 + (c - '0'), 10);
      } else if (frac_digits < 3) {
        milli = milli * 10 + (c - '0');
        ++frac_digits;
      } else if (c != '0') {
        round_up = true;
      }
    } else {
      return bad();
    }
  }
  if (!digit) return bad();
  for (; frac_digits < 3; ++frac_digits) milli *= 10;
  std::int64_t total = whole * 1000 + milli + (round_up ? 1 : 0);
  if (total <= 0 || total > 1000) return bad();
  return MilliGpu(total);
}

Result<std::vector<int>> parse_devices(const std::string& key, const std::string& value, const std::string& who) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string item = value.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0 || v > 4095) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\": must list GPU indices, e.g. \"0,3\"", who,
                              key, excerpt(value));
    }
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\": GPU {} is listed twice", who, key, excerpt(value), v);
    }
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

const std::string* find(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace

Result<FractionAnnotations> read_fraction_annotations(const std::map<std::string, std::string>& annotations,
                                                      const std::vector<std::string>& containers,
                                                      bool bound, const std::string& who) {
  FractionAnnotations out;
  auto nv = collect_nv_keys(annotations, containers, who);
  if (!nv) return nv.status();

  GpuFraction f;
  bool is_fraction = false;
  std::string nv_container;

  if (nv->has_value()) {
    const NvKeys& keys = **nv;
    nv_container = keys.container;
    for (std::string_view written : {kDevices, kPortion}) {
      if (keys.values.count(std::string(written)) && !bound) {
        return invalid_argument(
            "{}: annotation \"{}\" is written by the scheduler at bind time; a pending pod must not "
            "set it",
            who, key_of(keys.container, written));
      }
    }
    if (const auto* v = find(keys.values, kPortion)) {
      // Written by the scheduler; a bound pod's value is not used, but it must be sane.
      if (!parse_fraction(*v, who, key_of(keys.container, kPortion))) {
        return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a decimal in (0, 1]", who,
                                key_of(keys.container, kPortion), excerpt(*v));
      }
    }
    // With fracpack.io/gpus (the ledger's indices), gpus.devices names the physical GPUs a
    // reservation pod reported (UUIDs): not indices, and not the ledger's business.
    if (const auto* v = find(keys.values, kDevices); v != nullptr && !(bound && find(annotations, kLedgerGpusAnnotation))) {
      auto devices = parse_devices(key_of(keys.container, kDevices), *v, who);
      if (!devices) return devices.status();
      out.devices = std::move(*devices);
    }
    const auto* request = find(keys.values, kMemoryRequest);
    const auto* limit = find(keys.values, kMemoryLimit);
    if (request != nullptr) {
      auto mib = memory_annotation(key_of(keys.container, kMemoryRequest), *request, who);
      if (!mib) return mib.status();
      f.memory = *mib;
    }
    if (limit != nullptr) {
      auto mib = memory_annotation(key_of(keys.container, kMemoryLimit), *limit, who);
      if (!mib) return mib.status();
      f.memory_limit = *mib;
      if (!f.memory) f.memory = *mib;  // only a limit: the request equals it
      if (*f.memory_limit < *f.memory) {
        return invalid_argument("{}: annotation \"{}\" = \"{}\" is below the request \"{}\" = \"{}\"; "
                                "a limit must be ≥ the request",
                                who, key_of(keys.container, kMemoryLimit), excerpt(*limit),
                                key_of(keys.container, kMemoryRequest), excerpt(*request));
      }
    }
    if (const auto* mode = find(keys.values, kComputeMode)) {
      if (*mode == "sm-sharing") {
        f.mode = ComputeMode::kSmSharing;
      } else if (*mode != "time-slicing") {
        return invalid_argument("{}: annotation \"{}\" = \"{}\": must be time-slicing or sm-sharing", who,
                                key_of(keys.container, kComputeMode), excerpt(*mode));
      }
      if (!f.memory && !find(annotations, kGpuMemory) && !find(annotations, kGpuFraction)) {
        return invalid_argument("{}: annotation \"{}\" is set but no GPU memory is requested (set {})",
                                who, key_of(keys.container, kComputeMode),
                                key_of(keys.container, kMemoryRequest));
      }
    }
    is_fraction = f.memory.has_value();
  }
  if (const auto* v = find(annotations, kLedgerGpusAnnotation); v != nullptr && out.devices.empty() && bound) {
    // The GPUs fracpack's ledger gave a pod it bound: whole (the device plugin chooses the physical
    // devices), or shared behind a reservation pod; a restart holds the same ones again.
    auto devices = parse_devices(std::string(kLedgerGpusAnnotation), *v, who);
    if (!devices) return devices.status();
    out.devices = std::move(*devices);
  }

  const auto* fraction = find(annotations, kGpuFraction);
  const auto* memory = find(annotations, kGpuMemory);
  const auto* num_devices = find(annotations, kNumDevices);
  const auto* container_name = find(annotations, kContainerName);

  if (fraction != nullptr && memory != nullptr) {
    return invalid_argument("{}: annotations \"{}\" and \"{}\" are mutually exclusive; set one", who,
                            kGpuFraction, kGpuMemory);
  }
  if (fraction != nullptr) {
    if (f.memory) {
      return invalid_argument(
          "{}: annotation \"{}\" cannot be combined with NvFractions \"{}\"; use one form", who,
          kGpuFraction, key_of(nv_container, kMemoryRequest));
    }
    auto portion = parse_fraction(*fraction, who);
    if (!portion) return portion.status();
    f.portion = *portion;
    is_fraction = true;
  }
  if (memory != nullptr) {
    auto mib = strict_positive_integer(*memory);
    if (!mib) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a whole number of MiB > 0 (KAI gpu-memory)",
                              who, kGpuMemory, excerpt(*memory));
    }
    if (f.memory && f.memory->count() != *mib) {
      const bool from_limit = nv->has_value() && !find((*nv)->values, kMemoryRequest);
      return invalid_argument(
          "{}: annotation \"{}\" = \"{}\" MiB disagrees with NvFractions \"{}\" ({}{}); they must agree", who,
          kGpuMemory, excerpt(*memory), key_of(nv_container, from_limit ? kMemoryLimit : kMemoryRequest), *f.memory,
          from_limit ? ", which sets the request when it is alone" : "");
    }
    f.memory = MiB(*mib);
    is_fraction = true;
  }
  if (num_devices != nullptr) {
    auto n = strict_positive_integer(*num_devices);
    if (!n || *n > 1024) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a whole number from 1 to 1024", who,
                              kNumDevices, excerpt(*num_devices));
    }
    if (!is_fraction) {
      return invalid_argument("{}: annotation \"{}\" is invalid alone; it needs \"{}\" or \"{}\"", who,
                              kNumDevices, kGpuFraction, kGpuMemory);
    }
    f.num_devices = static_cast<int>(*n);
  }
  if (container_name != nullptr) {
    if (std::find(containers.begin(), containers.end(), *container_name) == containers.end()) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\": no such container (containers: {})", who,
                              kContainerName, excerpt(*container_name), list(containers));
    }
    if (!nv_container.empty() && nv_container != *container_name) {
      return invalid_argument("{}: annotation \"{}\" = \"{}\" but the NvFractions keys name container \"{}\"",
                              who, kContainerName, excerpt(*container_name), nv_container);
    }
    if (!is_fraction) {
      return invalid_argument("{}: annotation \"{}\" is set but the pod requests no GPU fraction", who,
                              kContainerName);
    }
  }
  if (!is_fraction) return out;
  f.container = !nv_container.empty() ? nv_container
                : container_name    ? *container_name
                                    : containers.front();
  out.fraction = std::move(f);
  return out;
}

}  // namespace fracpack::k8s
