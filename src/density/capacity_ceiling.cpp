// The allocation ceiling with CPU: the LP of capacity_ceiling.hpp, built, solved by CLP and
// certified by weak duality.
#include "fracpack/sim/capacity_ceiling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

#include <Clp_C_Interface.h>

#include "fracpack/binpack/packing_bound.hpp"

namespace fracpack::density {
namespace {

/// Nodes alike for the LP.
struct NodeShape {
  int gpus = 0;
  std::string model;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  double count = 0;
  auto key() const { return std::tie(gpus, model, cpu_milli, memory_mib); }
};

/// Pods alike for the LP.
struct PodClass {
  bool placed = false;  ///< all of them are placed (an equality row), else any number up to count
  int gpus = 0;
  std::int64_t milli = 0;  ///< per GPU
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::vector<std::string> models;  ///< allowed GPU models; empty: any
  double count = 0;
  auto key() const { return std::tie(placed, gpus, milli, cpu_milli, memory_mib, models); }
  [[nodiscard]] bool share() const { return gpus == 1 && milli > 0 && milli < 1000; }
  [[nodiscard]] double gpu_total() const { return static_cast<double>(gpus * milli) / 1000.0; }
};

template <class T>
std::vector<T> merged(std::vector<T> items) {
  std::sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.key() < b.key(); });
  std::vector<T> out;
  for (T& item : items) {
    if (!out.empty() && out.back().key() == item.key()) {
      out.back().count += item.count;
    } else {
      out.push_back(std::move(item));
    }
  }
  return out;
}

std::vector<NodeShape> node_shapes(const std::vector<NodeSpec>& nodes) {
  std::vector<NodeShape> shapes;
  for (const NodeSpec& n : nodes) {
    if (!n.ready || !n.schedulable) continue;  // CPU-only nodes stay: placed CPU-only pods may be there
    shapes.push_back({static_cast<int>(n.gpus.size()), n.gpu_product, n.cpu.count(), to_mib_ceil(n.memory).count(), 1});
  }
  return merged(std::move(shapes));
}

void add_classes(const std::vector<const trace::TracePod*>& pods, bool placed, std::vector<PodClass>& classes) {
  for (const trace::TracePod* p : pods) {
    const bool gpu = p->num_gpu > 0 && p->gpu_milli.count() > 0;
    if (!placed && (!gpu || p->gpu_milli.count() < 1000)) continue;  // failed: whole-GPU pods only
    std::vector<std::string> models = p->gpu_spec;
    std::sort(models.begin(), models.end());
    classes.push_back({placed, gpu ? p->num_gpu : 0, gpu ? p->gpu_milli.count() : 0, p->cpu.count(), p->memory.count(),
                       std::move(models), 1});
  }
}

bool fits(const PodClass& p, const NodeShape& t) {
  const bool model_ok = p.models.empty() || std::binary_search(p.models.begin(), p.models.end(), t.model);
  return model_ok && p.gpus <= t.gpus && p.cpu_milli <= t.cpu_milli && p.memory_mib <= t.memory_mib;
}

/// max cᵀy, A y ≤ b (= b on the rows marked), y ≥ 0, A by columns. Rows: one per pod class,
/// then kShapeRows per shape.
struct Lp {
  std::vector<double> b;
  std::vector<bool> equal;  ///< per row: = b (a placed class), else ≤ b
  std::vector<double> c;
  std::vector<int> start{0};  ///< CLP's column starts (CoinBigIndex is int in Debian's build)
  std::vector<int> row;
  std::vector<double> value;
  std::vector<std::size_t> class_of;  ///< per column: its pod class row
};
constexpr std::size_t kShapeRows = 4;  // CPU (cores), memory (GiB), GPUs, priced GPUs

void add_column(Lp& lp, std::size_t class_row, std::size_t shape_base, const PodClass& p, double priced) {
  const double entries[kShapeRows] = {static_cast<double>(p.cpu_milli) / 1000.0,
                                      static_cast<double>(p.memory_mib) / 1024.0, p.gpu_total(), priced};
  lp.row.push_back(static_cast<int>(class_row));
  lp.value.push_back(1.0);
  for (std::size_t k = 0; k < kShapeRows; ++k) {
    if (entries[k] == 0.0) continue;
    lp.row.push_back(static_cast<int>(shape_base + k));
    lp.value.push_back(entries[k]);
  }
  lp.start.push_back(static_cast<int>(lp.row.size()));
  lp.c.push_back(p.gpu_total());
  lp.class_of.push_back(class_row);
}

Lp build_lp(const std::vector<NodeShape>& shapes, const std::vector<PodClass>& classes) {
  std::map<std::int64_t, std::int64_t> shares;
  for (const PodClass& p : classes) {
    if (p.share()) shares[p.milli] += static_cast<std::int64_t>(p.count);
  }
  const std::map<std::int64_t, double> price = binpack::share_prices(shares);
  Lp lp;
  for (const PodClass& p : classes) {
    lp.b.push_back(p.count);
    lp.equal.push_back(p.placed);
  }
  for (const NodeShape& t : shapes) {
    const double gpus = t.count * t.gpus;
    lp.b.insert(lp.b.end(), {t.count * static_cast<double>(t.cpu_milli) / 1000.0,
                             t.count * static_cast<double>(t.memory_mib) / 1024.0, gpus, gpus});
    lp.equal.resize(lp.b.size(), false);
  }
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const PodClass& p = classes[i];
    const double priced = p.share() ? price.at(p.milli) : static_cast<double>(p.gpus);
    for (std::size_t s = 0; s < shapes.size(); ++s) {
      if (fits(p, shapes[s])) add_column(lp, i, classes.size() + s * kShapeRows, p, priced);
    }
  }
  return lp;
}

/// CLP's row duals (whatever it reached: certified_bound makes any of them safe) and, when it
/// proved the LP optimal, the primal row activities (else empty).
struct Solved {
  std::vector<double> duals;
  std::vector<double> activity;
};

Solved solve(const Lp& lp) {
  const int cols = static_cast<int>(lp.c.size());
  const int rows = static_cast<int>(lp.b.size());
  std::unique_ptr<Clp_Simplex, decltype(&Clp_deleteModel)> model(Clp_newModel(), &Clp_deleteModel);
  Clp_setLogLevel(model.get(), 0);
  std::vector<double> lower(static_cast<std::size_t>(rows), -std::numeric_limits<double>::max());
  for (std::size_t r = 0; r < lower.size(); ++r) {
    if (lp.equal[r]) lower[r] = lp.b[r];
  }
  Clp_loadProblem(model.get(), cols, rows, lp.start.data(), lp.row.data(), lp.value.data(), nullptr, nullptr, lp.c.data(),
                  lower.data(), lp.b.data());
  Clp_setOptimizationDirection(model.get(), -1.0);  // maximise
  Clp_initialSolve(model.get());
  Solved out;
  if (const double* duals = Clp_dualRowSolution(model.get()); duals != nullptr) out.duals.assign(duals, duals + rows);
  const double* activity = Clp_getRowActivity(model.get());
  if (Clp_isProvenOptimal(model.get()) != 0 && activity != nullptr) out.activity.assign(activity, activity + rows);
  return out;
}

/// bᵀu for duals u (each taken with `sign`; ≥ 0 on ≤ rows, any sign on = rows) made feasible
/// (Aᵀu ≥ c) by raising each column's pod-class dual (coefficient 1) by what it lacks: an upper
/// bound on the LP's optimum however `duals` came about (weak duality). Empty duals: the GPUs of
/// every pod that could be placed.
double certified_bound(const Lp& lp, std::vector<double> duals, double sign) {
  duals.resize(lp.b.size(), 0.0);
  for (std::size_t r = 0; r < duals.size(); ++r) duals[r] = lp.equal[r] ? sign * duals[r] : std::max(0.0, sign * duals[r]);
  std::vector<double> raise(lp.b.size(), 0.0);
  for (std::size_t j = 0; j < lp.c.size(); ++j) {
    double covered = 0;
    for (auto k = static_cast<std::size_t>(lp.start[j]); k < static_cast<std::size_t>(lp.start[j + 1]); ++k) {
      covered += lp.value[k] * duals[static_cast<std::size_t>(lp.row[k])];
    }
    raise[lp.class_of[j]] = std::max(raise[lp.class_of[j]], lp.c[j] - covered);
  }
  double bound = 0;
  for (std::size_t r = 0; r < lp.b.size(); ++r) bound += lp.b[r] * (duals[r] + raise[r]);
  return bound;
}

}  // namespace

CapacityCeiling capacity_ceiling(const std::vector<NodeSpec>& nodes, const std::vector<const trace::TracePod*>& placed,
                                 const std::vector<const trace::TracePod*>& failed) {
  const std::vector<NodeShape> shapes = node_shapes(nodes);
  double capacity = 0;
  double cpu_capacity = 0;
  for (const NodeShape& t : shapes) {
    capacity += t.count * t.gpus;
    cpu_capacity += t.count * static_cast<double>(t.cpu_milli) / 1000.0;
  }
  CapacityCeiling out;
  out.cpu_used_pct = std::numeric_limits<double>::quiet_NaN();
  if (capacity <= 0) return out;
  std::vector<PodClass> classes;
  add_classes(placed, true, classes);
  add_classes(failed, false, classes);
  classes = merged(std::move(classes));
  if (classes.empty()) return out;
  const Lp lp = build_lp(shapes, classes);
  const Solved solved = solve(lp);
  // CLP's sign convention for a maximisation's duals is its own: both readings give a valid
  // bound, as do no duals at all (every pod that fits somewhere).
  const double bound = std::min({certified_bound(lp, solved.duals, 1.0), certified_bound(lp, solved.duals, -1.0),
                                 certified_bound(lp, {}, 1.0)});
  out.gpus = std::min(bound, capacity);
  out.allocation_pct = 100.0 * out.gpus / capacity;
  if (!solved.activity.empty() && cpu_capacity > 0) {
    double cpu = 0;
    for (std::size_t s = 0; s < shapes.size(); ++s) cpu += solved.activity[classes.size() + s * kShapeRows];
    out.cpu_used_pct = 100.0 * cpu / cpu_capacity;
  }
  return out;
}

}  // namespace fracpack::density
