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

/// Pod annotations fracpack reads or writes outside nvidia.com/container.*: KAI's legacy keys and
/// fracpack.io/'s (docs/requests.md rule 24).
constexpr std::string_view kOwnedKeys[] = {kGpuFraction, kGpuMemory, kNumDevices, kContainerName,
                                           kLedgerGpusAnnotation, kGpuGroupsAnnotation, kRetryAnnotation};

/// A key in the families we own ("gpu-fraction…", "gpu-memory…", "fracpack.io/…") that is none of
/// ours: a typo such as gpu-fraction-num-device, refused rather than ignored.
Status check_owned_keys(const std::map<std::string, std::string>& annotations, const std::string& who) {
  for (const auto& [key, value] : annotations) {
    const bool owned_family = key.starts_with(kGpuFraction) || key.starts_with(kGpuMemory) || key.starts_with("fracpack.io/");
    if (!owned_family || std::find(std::begin(kOwnedKeys), std::end(kOwnedKeys), key) != std::end(kOwnedKeys)) continue;
    return invalid_argument("{}: unknown annotation \"{}\" (known: {}, {}, {}, {}; fracpack.io/gpus, gpu-groups and retry are "
                            "written by fracpack)",
                            who, excerpt(key), kGpuFraction, kGpuMemory, kNumDevices, kContainerName);
  }
  return Status::ok();
}

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

/// `gpu-compute.portion` as fracpack writes it: one decimal in (0, 1] per device ("0.25,0.49").
bool portions_are_sane(const std::string& value) {
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    if (!parse_fraction(value.substr(start, end - start), "", kPortion)) return false;
    start = end + 1;
  }
  return true;
}

const std::string* find(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? nullptr : &it->second;
}

/// One pod's fraction annotations, read in steps: the NvFractions keys of one container, the
/// ledger's device indices, KAI's legacy gpu-fraction / gpu-memory, then the keys that qualify a
/// fraction (num-devices, container name). Each step returns the first rule broken.
class FractionReader {
 public:
  FractionReader(const std::map<std::string, std::string>& annotations, const std::vector<std::string>& containers,
                 bool bound, const std::string& who)
      : annotations_(annotations), containers_(containers), bound_(bound), who_(who) {}

  Result<FractionAnnotations> read();

 private:
  Status read_nv(const NvKeys& keys);
  Status read_nv_memory(const NvKeys& keys);
  Status read_compute_mode(const NvKeys& keys);
  Status read_ledger_gpus();
  Status read_legacy(const std::optional<NvKeys>& nv);
  Status read_num_devices();
  Status read_container_name();

  const std::map<std::string, std::string>& annotations_;
  const std::vector<std::string>& containers_;
  const bool bound_;
  const std::string& who_;
  FractionAnnotations out_;
  GpuFraction f_;
  bool is_fraction_ = false;
  std::string nv_container_;
};

Status FractionReader::read_nv(const NvKeys& keys) {
  nv_container_ = keys.container;
  for (std::string_view written : {kDevices, kPortion}) {
    if (keys.values.count(std::string(written)) && !bound_) {
      return invalid_argument(
          "{}: annotation \"{}\" is written by the scheduler at bind time; a pending pod must not "
          "set it",
          who_, key_of(keys.container, written));
    }
  }
  if (const auto* v = find(keys.values, kPortion); v != nullptr && !portions_are_sane(*v)) {
    // Written by the scheduler; a bound pod's value is not used, but it must be sane.
    return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a decimal in (0, 1] per device, comma-separated",
                            who_, key_of(keys.container, kPortion), excerpt(*v));
  }
  // With fracpack.io/gpus (the ledger's indices), gpus.devices names the physical GPUs a
  // reservation pod reported (UUIDs): not indices, and not the ledger's business.
  if (const auto* v = find(keys.values, kDevices); v != nullptr && !(bound_ && find(annotations_, kLedgerGpusAnnotation))) {
    auto devices = parse_devices(key_of(keys.container, kDevices), *v, who_);
    if (!devices) return devices.status();
    out_.devices = std::move(*devices);
  }
  if (Status st = read_nv_memory(keys); !st.is_ok()) return st;
  if (Status st = read_compute_mode(keys); !st.is_ok()) return st;
  is_fraction_ = f_.memory.has_value();
  return Status::ok();
}

Status FractionReader::read_nv_memory(const NvKeys& keys) {
  const auto* request = find(keys.values, kMemoryRequest);
  const auto* limit = find(keys.values, kMemoryLimit);
  if (request != nullptr) {
    auto mib = memory_annotation(key_of(keys.container, kMemoryRequest), *request, who_);
    if (!mib) return mib.status();
    f_.memory = *mib;
  }
  if (limit == nullptr) return Status::ok();
  auto mib = memory_annotation(key_of(keys.container, kMemoryLimit), *limit, who_);
  if (!mib) return mib.status();
  f_.memory_limit = *mib;
  if (!f_.memory) f_.memory = *mib;  // only a limit: the request equals it
  if (*f_.memory_limit < *f_.memory) {
    return invalid_argument("{}: annotation \"{}\" = \"{}\" is below the request \"{}\" = \"{}\"; "
                            "a limit must be ≥ the request",
                            who_, key_of(keys.container, kMemoryLimit), excerpt(*limit),
                            key_of(keys.container, kMemoryRequest), excerpt(*request));
  }
  return Status::ok();
}

Status FractionReader::read_compute_mode(const NvKeys& keys) {
  const auto* mode = find(keys.values, kComputeMode);
  if (mode == nullptr) return Status::ok();
  if (*mode == "sm-sharing") {
    f_.mode = ComputeMode::kSmSharing;
  } else if (*mode != "time-slicing") {
    return invalid_argument("{}: annotation \"{}\" = \"{}\": must be time-slicing or sm-sharing", who_,
                            key_of(keys.container, kComputeMode), excerpt(*mode));
  }
  if (!f_.memory && !find(annotations_, kGpuMemory) && !find(annotations_, kGpuFraction)) {
    return invalid_argument("{}: annotation \"{}\" is set but no GPU memory is requested (set {})", who_,
                            key_of(keys.container, kComputeMode), key_of(keys.container, kMemoryRequest));
  }
  return Status::ok();
}

// The GPUs fracpack's ledger gave a pod it bound: whole (the device plugin chooses the physical
// devices), or shared behind a reservation pod; a restart holds the same ones again.
Status FractionReader::read_ledger_gpus() {
  const auto* v = find(annotations_, kLedgerGpusAnnotation);
  if (v == nullptr || !out_.devices.empty() || !bound_) return Status::ok();
  auto devices = parse_devices(std::string(kLedgerGpusAnnotation), *v, who_);
  if (!devices) return devices.status();
  out_.devices = std::move(*devices);
  return Status::ok();
}

// KAI's legacy gpu-fraction and gpu-memory: one or the other, agreeing with NvFractions if both.
Status FractionReader::read_legacy(const std::optional<NvKeys>& nv) {
  const auto* fraction = find(annotations_, kGpuFraction);
  const auto* memory = find(annotations_, kGpuMemory);
  if (fraction != nullptr && memory != nullptr) {
    return invalid_argument("{}: annotations \"{}\" and \"{}\" are mutually exclusive; set one", who_, kGpuFraction,
                            kGpuMemory);
  }
  if (fraction != nullptr) {
    if (f_.memory) {
      return invalid_argument("{}: annotation \"{}\" cannot be combined with NvFractions \"{}\"; use one form", who_,
                              kGpuFraction, key_of(nv_container_, kMemoryRequest));
    }
    auto portion = parse_fraction(*fraction, who_);
    if (!portion) return portion.status();
    f_.portion = *portion;
    is_fraction_ = true;
  }
  if (memory == nullptr) return Status::ok();
  auto mib = strict_positive_integer(*memory);
  if (!mib) {
    return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a whole number of MiB > 0 (KAI gpu-memory)", who_,
                            kGpuMemory, excerpt(*memory));
  }
  if (f_.memory && f_.memory->count() != *mib) {
    const bool from_limit = nv.has_value() && !find(nv->values, kMemoryRequest);
    return invalid_argument("{}: annotation \"{}\" = \"{}\" MiB disagrees with NvFractions \"{}\" ({}{}); they must agree",
                            who_, kGpuMemory, excerpt(*memory),
                            key_of(nv_container_, from_limit ? kMemoryLimit : kMemoryRequest), *f_.memory,
                            from_limit ? ", which sets the request when it is alone" : "");
  }
  f_.memory = MiB(*mib);
  is_fraction_ = true;
  return Status::ok();
}

Status FractionReader::read_num_devices() {
  const auto* num_devices = find(annotations_, kNumDevices);
  if (num_devices == nullptr) return Status::ok();
  auto n = strict_positive_integer(*num_devices);
  if (!n || *n > 1024) {
    return invalid_argument("{}: annotation \"{}\" = \"{}\": must be a whole number from 1 to 1024", who_, kNumDevices,
                            excerpt(*num_devices));
  }
  if (!is_fraction_) {
    return invalid_argument("{}: annotation \"{}\" is invalid alone; it needs \"{}\" or \"{}\"", who_, kNumDevices,
                            kGpuFraction, kGpuMemory);
  }
  f_.num_devices = static_cast<int>(*n);
  return Status::ok();
}

Status FractionReader::read_container_name() {
  const auto* container_name = find(annotations_, kContainerName);
  if (container_name == nullptr) return Status::ok();
  if (std::find(containers_.begin(), containers_.end(), *container_name) == containers_.end()) {
    return invalid_argument("{}: annotation \"{}\" = \"{}\": no such container (containers: {})", who_, kContainerName,
                            excerpt(*container_name), list(containers_));
  }
  if (!nv_container_.empty() && nv_container_ != *container_name) {
    return invalid_argument("{}: annotation \"{}\" = \"{}\" but the NvFractions keys name container \"{}\"", who_,
                            kContainerName, excerpt(*container_name), nv_container_);
  }
  if (!is_fraction_) {
    return invalid_argument("{}: annotation \"{}\" is set but the pod requests no GPU fraction", who_, kContainerName);
  }
  return Status::ok();
}

Result<FractionAnnotations> FractionReader::read() {
  if (Status st = check_owned_keys(annotations_, who_); !st.is_ok()) return st;
  auto nv = collect_nv_keys(annotations_, containers_, who_);
  if (!nv) return nv.status();
  if (nv->has_value()) {
    if (Status st = read_nv(**nv); !st.is_ok()) return st;
  }
  if (Status st = read_ledger_gpus(); !st.is_ok()) return st;
  if (Status st = read_legacy(*nv); !st.is_ok()) return st;
  if (Status st = read_num_devices(); !st.is_ok()) return st;
  if (Status st = read_container_name(); !st.is_ok()) return st;
  if (!is_fraction_) return out_;
  const auto* container_name = find(annotations_, kContainerName);
  f_.container = !nv_container_.empty() ? nv_container_ : container_name ? *container_name : containers_.front();
  out_.fraction = std::move(f_);
  return out_;
}

}  // namespace

Result<FractionAnnotations> read_fraction_annotations(const std::map<std::string, std::string>& annotations,
                                                      const std::vector<std::string>& containers,
                                                      bool bound, const std::string& who) {
  return FractionReader(annotations, containers, bound, who).read();
}

}  // namespace fracpack::k8s
