#include "fracpack/sim/alibaba.hpp"

#include <array>
#include <charconv>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "trace/csv_table.hpp"

namespace fracpack::trace {
namespace {

constexpr std::array<std::pair<std::string_view, std::int64_t>, 7> kModels{{
    {"G2", 20000}, {"T4", 15109}, {"P100", 16280}, {"G3", 30000}, {"V100M16", 16160}, {"V100M32", 32510}, {"A10", 22731},
}};

/// Reads named columns of one row as integers, with errors naming file, line and column.
class RowReader {
 public:
  RowReader(const CsvTable& t, std::size_t row) : t_(t), row_(row) {}

  Result<std::int64_t> integer(int col, std::int64_t lo, std::int64_t hi) const {
    const std::string& text = t_.rows[row_][static_cast<std::size_t>(col)];
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec == std::errc::result_out_of_range) {
      return invalid_argument("{}: {} = {} is outside {}..{}", t_.where(row_), t_.header[static_cast<std::size_t>(col)], text, lo, hi);
    }
    if (text.empty() || ec != std::errc{} || ptr != end) {
      return invalid_argument("{}: {} \"{}\" is not an integer", t_.where(row_), t_.header[static_cast<std::size_t>(col)], text);
    }
    if (v < lo || v > hi) {
      return invalid_argument("{}: {} = {} is outside {}..{}", t_.where(row_), t_.header[static_cast<std::size_t>(col)], v, lo, hi);
    }
    return v;
  }
  [[nodiscard]] const std::string& text(int col) const { return t_.rows[row_][static_cast<std::size_t>(col)]; }

 private:
  const CsvTable& t_;
  std::size_t row_;
};

Result<std::vector<int>> columns(const CsvTable& t, std::initializer_list<std::string_view> names) {
  std::vector<int> out;
  for (auto name : names) {
    const int c = t.column(name);
    if (c < 0) return invalid_argument("{}: the header has no column \"{}\"", t.file, name);
    out.push_back(c);
  }
  return out;
}

constexpr std::int64_t kMaxCpu = std::int64_t{1} << 40;     // milli-CPU: far above any machine
constexpr std::int64_t kMaxMemory = std::int64_t{1} << 40;  // MiB: an exabyte

}  // namespace

std::optional<MiB> model_memory(std::string_view model) {
  for (const auto& [name, mib] : kModels) {
    if (name == model) return MiB(mib);
  }
  return std::nullopt;
}

Result<std::vector<TraceNode>> read_nodes(const std::filesystem::path& csv) {
  auto table = read_csv(csv);
  if (!table) return table.status();
  auto cols = columns(*table, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!cols) return cols.status();
  std::vector<TraceNode> nodes;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < table->rows.size(); ++r) {
    RowReader row(*table, r);
    TraceNode n;
    n.name = row.text((*cols)[0]);
    if (n.name.empty()) return invalid_argument("{}: sn is empty", table->where(r));
    if (!seen.insert(n.name).second) return invalid_argument("{}: node {} appears twice", table->where(r), n.name);
    auto cpu = row.integer((*cols)[1], 0, kMaxCpu);
    if (!cpu) return cpu.status();
    auto memory = row.integer((*cols)[2], 0, kMaxMemory);
    if (!memory) return memory.status();
    auto gpus = row.integer((*cols)[3], 0, 64);
    if (!gpus) return gpus.status();
    n.cpu = MilliCpu(*cpu);
    n.memory = MiB(*memory);
    n.gpus = static_cast<int>(*gpus);
    n.model = row.text((*cols)[4]);
    if (n.gpus > 0 && !model_memory(n.model)) {
      return invalid_argument("{}: node {} has GPU model \"{}\", not one of G2, T4, P100, G3, V100M16, V100M32, A10",
                              table->where(r), n.name, n.model);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<TracePod>> read_pods(const std::filesystem::path& csv) {
  auto table = read_csv(csv);
  if (!table) return table.status();
  auto cols = columns(*table, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!cols) return cols.status();
  const int spec_col = table->column("gpu_spec");
  const int qos_col = table->column("qos");
  const int created_col = table->column("creation_time");
  const int deleted_col = table->column("deletion_time");
  const int scheduled_col = table->column("scheduled_time");
  std::vector<TracePod> pods;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < table->rows.size(); ++r) {
    RowReader row(*table, r);
    TracePod p;
    p.name = row.text((*cols)[0]);
    if (p.name.empty()) return invalid_argument("{}: name is empty", table->where(r));
    if (!seen.insert(p.name).second) return invalid_argument("{}: pod {} appears twice", table->where(r), p.name);
    auto cpu = row.integer((*cols)[1], 0, kMaxCpu);
    if (!cpu) return cpu.status();
    auto memory = row.integer((*cols)[2], 0, kMaxMemory);
    if (!memory) return memory.status();
    auto num_gpu = row.integer((*cols)[3], 0, 64);
    if (!num_gpu) return num_gpu.status();
    auto gpu_milli = row.integer((*cols)[4], 0, 1000);
    if (!gpu_milli) return gpu_milli.status();
    p.cpu = MilliCpu(*cpu);
    p.memory = MiB(*memory);
    p.num_gpu = static_cast<int>(*num_gpu);
    p.gpu_milli = MilliGpu(*gpu_milli);
    if (p.num_gpu == 0 && *gpu_milli != 0) {
      return invalid_argument("{}: pod {} has gpu_milli {} but num_gpu 0; a CPU-only pod has gpu_milli 0", table->where(r), p.name,
                              *gpu_milli);
    }
    if (p.num_gpu > 0 && *gpu_milli == 0) {
      return invalid_argument("{}: pod {} asks for {} GPU(s) with gpu_milli 0", table->where(r), p.name, p.num_gpu);
    }
    if (p.num_gpu > 1 && *gpu_milli < 1000) {
      return invalid_argument("{}: pod {} asks for a fraction ({} milli) of {} GPUs; fractions are of one GPU", table->where(r),
                              p.name, *gpu_milli, p.num_gpu);
    }
    if (spec_col >= 0 && !row.text(spec_col).empty()) {
      std::string_view rest = row.text(spec_col);
      while (!rest.empty()) {
        const auto bar = rest.find('|');
        const std::string model(rest.substr(0, bar));
        if (!model_memory(model)) {
          return invalid_argument("{}: pod {} gpu_spec names \"{}\", not a known GPU model", table->where(r), p.name, model);
        }
        p.gpu_spec.push_back(model);
        rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
      }
    }
    if (qos_col >= 0) p.qos = row.text(qos_col);
    if (created_col >= 0 && !row.text(created_col).empty()) {
      auto t = row.integer(created_col, 0, kMaxCpu);
      if (!t) return t.status();
      p.creation_time = *t;
    }
    for (auto [col, slot] : {std::pair{deleted_col, &p.deletion_time}, std::pair{scheduled_col, &p.scheduled_time}}) {
      if (col < 0 || row.text(col).empty()) continue;
      auto t = row.integer(col, 0, kMaxCpu);
      if (!t) return t.status();
      *slot = *t;
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

NodeSpec to_node_spec(const TraceNode& node) {
  NodeSpec spec;
  spec.name = node.name;
  spec.cpu = node.cpu;
  spec.memory = to_bytes(node.memory);
  if (node.gpus > 0) {
    const MiB memory = model_memory(node.model).value_or(MiB{0});
    for (int g = 0; g < node.gpus; ++g) spec.gpus.push_back(GpuDevice{g, memory});
    spec.labels.emplace(std::string(kModelLabel), node.model);
    spec.labels.emplace("nvidia.com/gpu.memory", std::to_string(memory.count()));
    spec.gpu_product = node.model;
    spec.gpu_memory_known = true;
    spec.sharing = SharingKind::kNvFractions;
    spec.fractions_ready = true;
  }
  return spec;
}

PodRequest to_pod_request(const TracePod& pod) {
  PodRequest out;
  out.namespace_name = "trace";
  out.name = pod.name;
  out.uid = pod.name;
  out.cpu = pod.cpu;
  out.memory = to_bytes(pod.memory);
  out.created = pod.creation_time;
  if (pod.num_gpu == 1 && pod.gpu_milli < kOneGpu) {
    GpuFraction f;
    f.portion = pod.gpu_milli;
    out.gpu = f;
  } else if (pod.num_gpu > 0) {
    out.gpu = WholeGpus{pod.num_gpu, false};
  }
  if (!pod.gpu_spec.empty()) {
    out.node_affinity.push_back(
        NodeSelectorTerm{{NodeSelectorRequirement{std::string(kModelLabel), NodeSelectorRequirement::Op::kIn, pod.gpu_spec}}});
  }
  return out;
}

}  // namespace fracpack::trace
