// Rendering a PlaceReport as JSON or as text tables.
#include <algorithm>

#include <fmt/format.h>

#include "fracpack/k8s/yaml_emit.hpp"
#include "fracpack/sim/place_job.hpp"

namespace fracpack {
namespace {

using ordered = nlohmann::ordered_json;  // keys in the documented order

std::string mode_text(const GpuChoice& c) {
  switch (c.hold) {
    case GpuHold::kNone: return "none";
    case GpuHold::kWhole: return "exclusive";
    default: return std::string(compute_mode_name(c.mode));
  }
}

/// `s` safe for a terminal: control characters and bytes of invalid UTF-8 become '?'.
std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(len == 1 && (c < 0x20 || c == 0x7F) && c != '\n');
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

ordered placement_json(const Placement& p) {
  ordered j{{"pod", p.pod}, {"node", p.node}, {"gpus", p.choice.gpus}, {"hold", gpu_hold_name(p.choice.hold)},
         {"mode", mode_text(p.choice)}};
  if (!p.choice.memory.empty() && p.choice.memory.front().count() > 0) {  // absent when unknown or not held
    j["memoryMiB"] = p.choice.memory.front().count();  // per GPU
    const bool uniform = std::all_of(p.choice.memory.begin(), p.choice.memory.end(),
                                     [&](MiB m) { return m == p.choice.memory.front(); });
    if (!uniform) {
      ordered per = ordered::array();
      for (MiB m : p.choice.memory) per.push_back(m.count());
      j["memoryMiBPerGpu"] = per;
    }
  }
  if (p.choice.hold == GpuHold::kFraction && p.choice.mode == ComputeMode::kSmSharing) {
    j["computePortion"] = p.choice.compute.front();
  }
  return j;
}

/// A queue amount as KAI writes it: GPUs as a decimal, millicores, MB; -1 for unlimited.
ordered kai_amount(queues::Resource r, std::int64_t v) {
  if (v == queues::kUnlimited) return -1;
  switch (r) {
    case queues::Resource::kGpu: return static_cast<double>(v) / 1000.0;
    case queues::Resource::kCpu: return v;
    case queues::Resource::kMemory: return (v + 999'999) / 1'000'000;
  }
  return v;
}

ordered queue_json(const QueueTotals& q) {
  ordered j{{"name", q.name}};
  if (!q.parent.empty()) j["parent"] = q.parent;
  for (queues::Resource r : queues::kResources) {
    j[std::string(queues::resource_name(r))] = {{"deserved", kai_amount(r, q.deserved[r])},
                                                {"fairShare", kai_amount(r, q.fair_share[r])},
                                                {"allocated", kai_amount(r, q.allocated[r])},
                                                {"allocatedNonPreemptible", kai_amount(r, q.allocated_non_preemptible[r])},
                                                {"pending", kai_amount(r, q.pending[r])},
                                                {"limit", kai_amount(r, q.limit[r])}};
  }
  return j;
}

std::string moves_text(const std::vector<Placement>& moved) {
  std::vector<std::string> out;
  for (const Placement& m : moved) out.push_back(fmt::format("{} to {}", m.pod, m.node));
  return fmt::format("{}", fmt::join(out, ", "));
}

/// What another action of the cycle placed a pod on, as the table shows it.
std::string preemption_text(const Preemption& p) {
  if (p.action == "consolidation") {
    return fmt::format("    consolidation: fits on {} once these move: {}\n", p.node, moves_text(p.moved));
  }
  std::string out = fmt::format("    {}: fits on {} once these are evicted: {}\n", p.action, p.node, fmt::join(p.victims, ", "));
  if (!p.moved.empty()) out += fmt::format("    and these move (they fit elsewhere): {}\n", moves_text(p.moved));
  return out;
}

}  // namespace

ordered report_json(const PlaceReport& r) {
  ordered placements = ordered::array();
  for (const auto& p : r.placements) placements.push_back(placement_json(p));
  ordered bound = ordered::array();
  for (const auto& p : r.bound) bound.push_back(placement_json(p));
  ordered unschedulable = ordered::array();
  for (const auto& u : r.unschedulable) {
    ordered nodes = ordered::object();
    for (const auto& [node, why] : u.nodes) nodes[node] = why;
    ordered entry{{"pod", u.pod}, {"status", u.status}, {"reason", u.reason}, {"nodes", nodes}};
    if (u.nodes_omitted > 0) entry["nodesOmitted"] = u.nodes_omitted;
    if (u.preemption) {
      ordered moved = ordered::array();
      for (const Placement& m : u.preemption->moved) moved.push_back({{"pod", m.pod}, {"node", m.node}, {"gpus", m.choice.gpus}});
      entry["preemption"] = {{"action", u.preemption->action}, {"node", u.preemption->node}, {"gpus", u.preemption->gpus},
                             {"victims", u.preemption->victims}, {"moved", moved}};
    }
    unschedulable.push_back(std::move(entry));
  }
  ordered queue_list = ordered::array();
  for (const auto& q : r.queues) queue_list.push_back(queue_json(q));
  ordered conflicts = ordered::array();
  for (const auto& c : r.conflicts) conflicts.push_back({{"pod", c.pod}, {"node", c.node}, {"reason", c.reason}});
  ordered states = ordered::object();
  for (const auto& s : r.gpu_states) states[s.state] = s.gpus;
  return ordered{{"policy", r.policy},
              {"placements", placements},
              {"unschedulable", unschedulable},
              {"bound", bound},
              {"conflicts", conflicts},
              {"warnings", r.warnings},
              {"queues", queue_list},
              {"summary",
               {{"nodes", r.nodes},
                {"placed", r.placements.size()},
                {"unschedulable", r.unschedulable.size()},
                {"bound", r.bound.size()},
                {"gpuStates", states}}}};
}

std::string report_json_text(const PlaceReport& report) {
  return report_json(report).dump(2, ' ', false, ordered::error_handler_t::replace);
}

std::string report_yaml_text(const PlaceReport& report) {
  // Through the JSON text: bytes that are not UTF-8 are replaced there, and YAML must be UTF-8.
  return k8s::to_yaml({nlohmann::json::parse(report_json_text(report))});
}

std::string report_table(const PlaceReport& r) {
  std::string out;
  auto row = [&](std::string_view pod, std::string_view node, std::string_view gpus, std::string_view mode,
                 std::string_view memory) {
    out += fmt::format("{:<36} {:<24} {:<16} {:<13} {}\n", pod, node, gpus, mode, memory);
  };
  auto placement_rows = [&](const std::vector<Placement>& list) {
    if (list.empty()) out += "(none)\n";
    for (const auto& p : list) {
      const bool has_memory = !p.choice.memory.empty() && p.choice.memory.front().count() > 0;
      row(p.pod, p.node, p.choice.gpus.empty() ? "-" : fmt::format("{}", fmt::join(p.choice.gpus, ",")),
          mode_text(p.choice), has_memory ? fmt::format("{} MiB", p.choice.memory.front().count()) : "-");
    }
  };
  constexpr std::size_t kNodesListed = 20;
  out += fmt::format("policy {}: {} placed, {} not placed, {} already bound, {}\n\n", r.policy, r.placements.size(),
                     r.unschedulable.size(), r.bound.size(), plural(r.nodes, "node"));
  row("POD", "NODE", "GPUS", "MODE", "MEMORY/GPU");
  placement_rows(r.placements);
  if (!r.unschedulable.empty()) {
    out += "\nNOT PLACED\n";
    for (const auto& u : r.unschedulable) {
      out += fmt::format("{:<36} {:<28} {}\n", u.pod, u.status, u.reason);
      if (u.preemption) out += preemption_text(*u.preemption);
      for (std::size_t i = 0; i < std::min(u.nodes.size(), kNodesListed); ++i) {
        out += fmt::format("    {}: {}\n", u.nodes[i].first, u.nodes[i].second);
      }
      const std::size_t more = u.nodes.size() - std::min(u.nodes.size(), kNodesListed) + u.nodes_omitted;
      if (more > 0) out += fmt::format("    … {} more node(s); --format json and --explain-nodes show more\n", more);
    }
  }
  if (!r.bound.empty()) {
    out += "\nALREADY BOUND\n";
    placement_rows(r.bound);
  }
  if (!r.queues.empty()) {
    out += fmt::format("\nQUEUES (GPUs: deserved / fair share / allocated / non-preemptible / pending)\n");
    for (const auto& q : r.queues) {
      using queues::Resource;
      const auto g = [&](const queues::Amounts& a) { return queues::format_amount(Resource::kGpu, a[Resource::kGpu]); };
      out += fmt::format("{:<36} {:>8} {:>8} {:>8} {:>8} {:>8}\n", std::string(2 * q.depth, ' ') + q.name,
                         g(q.deserved), g(q.fair_share), g(q.allocated), g(q.allocated_non_preemptible), g(q.pending));
    }
  }
  for (const auto& c : r.conflicts) out += fmt::format("\nCONFLICT {} bound to {}: {}\n", c.pod, c.node, c.reason);
  for (const auto& w : r.warnings) out += fmt::format("\nWARNING {}\n", w);
  std::vector<std::string> states;
  for (const auto& s : r.gpu_states) states.push_back(fmt::format("{} {}", s.gpus, s.state));
  out += fmt::format("\nGPUs: {}\n", fmt::join(states, ", "));
  return printable(out);  // names and reasons echo the input: never let them drive the terminal
}

}  // namespace fracpack
